package slicesx

import (
	"encoding/json"
	"strconv"
	"testing"
)

func TestMap(t *testing.T) {
	got := Map([]int{1, 2, 3}, strconv.Itoa)
	if len(got) != 3 || got[0] != "1" || got[2] != "3" {
		t.Fatalf("Map = %q", got)
	}
	empty, err := json.Marshal(Map([]int(nil), strconv.Itoa))
	if err != nil || string(empty) != "[]" {
		t.Fatalf("Map of nil marshals to %s (%v), want []", empty, err)
	}
}
