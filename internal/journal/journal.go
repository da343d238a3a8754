// Package journal is the format of a task directory's redo journal: the
// complete new content of every file a multi-file write puts, the files it
// deletes, and the id high-water mark to record first. It is written
// durably before any of those files is touched, so a writer that dies
// midway leaves a journal the next writer replays; replaying it twice
// writes the same bytes twice, so replay is idempotent.
package journal

import (
	"encoding/json"
	"fmt"
)

// Journal is one multi-file write. The JSON field names are the on-disk
// format: a journal left by an older version must still replay.
type Journal struct {
	Put       map[int64]string `json:"put"` // task id → the task file's full content
	Del       []int64          `json:"del"` // task ids whose files are removed
	HighWater int64            `json:"highWater"`
}

// Encode renders j as the journal file's content.
func Encode(j *Journal) ([]byte, error) { return json.Marshal(j) }

// Decode parses a journal file. It checks the shape only; the caller
// checks that each entry is a task file for its id before replaying any.
func Decode(data []byte) (*Journal, error) {
	var j Journal
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, err
	}
	for id := range j.Put {
		if id <= 0 {
			return nil, fmt.Errorf("entry for id %d: not a positive task id", id)
		}
	}
	for _, id := range j.Del {
		if id <= 0 {
			return nil, fmt.Errorf("deletion of id %d: not a positive task id", id)
		}
	}
	return &j, nil
}
