package pgstore

// ClaimReadySQL is the statement of ClaimNext's one-statement claim, for a
// test of its plan.
var ClaimReadySQL = claimReadySQL

// BlocksOf and DependentsSQL look a task's dependents up, for a test of
// their plans.
const (
	BlocksOf      = blocksOf
	DependentsSQL = dependentsSQL
)
