package pgstore

// ClaimReadySQL is the statement of ClaimNext's one-statement claim, for a
// test of its plan.
var ClaimReadySQL = claimReadySQL
