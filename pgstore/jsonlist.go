// Reading the notes and history columns without reflection: the common
// case of what PostgreSQL prints of them, with encoding/json for the rest.

package pgstore

import (
	"strconv"
	"unicode/utf8"

	"github.com/taskgraph-dev/taskgraph"
)

// decodeFlat decodes data, a JSON array of notes or transitions, into
// *out if it is in the form PostgreSQL prints of what this package
// writes: flat objects of known keys (exactly as encoding/json writes
// them) whose values are whole numbers or strings without escapes. It
// reports false, having changed nothing, for anything else, which
// encoding/json then decodes; where it reports true, the result is what
// encoding/json gives (FuzzDecodeFlat). Reading a board's notes and
// histories by reflection was a fifth of pgstore's Board.
func decodeFlat[T any](data []byte, out *[]T) bool {
	list := []T{} // as encoding/json leaves it for []
	var set func(e *T, key string, raw []byte) bool
	switch any(out).(type) {
	case *[]taskgraph.Note:
		set = func(e *T, key string, raw []byte) bool { return setNote(any(e).(*taskgraph.Note), key, raw) }
	case *[]taskgraph.Transition:
		set = func(e *T, key string, raw []byte) bool {
			return setTransition(any(e).(*taskgraph.Transition), key, raw)
		}
	default:
		return false
	}
	ok := flatObjects(data, func() { list = append(list, *new(T)) }, func(key string, raw []byte) bool {
		return set(&list[len(list)-1], key, raw)
	})
	if ok {
		*out = list
	}
	return ok
}

func setNote(n *taskgraph.Note, key string, raw []byte) bool {
	switch key {
	case "at":
		return n.At.UnmarshalJSON(raw) == nil
	case "author":
		return text(raw, &n.Author)
	case "text":
		return text(raw, &n.Text)
	}
	return false
}

func setTransition(e *taskgraph.Transition, key string, raw []byte) bool {
	switch key {
	case "at":
		return e.At.UnmarshalJSON(raw) == nil
	case "event":
		var s string
		ok := text(raw, &s)
		e.Event = taskgraph.HistoryEvent(s)
		return ok
	case "by":
		return text(raw, &e.By)
	case "detail":
		return text(raw, &e.Detail)
	case "count":
		if raw[0] == '"' {
			return false
		}
		n, err := strconv.Atoi(string(raw))
		e.Count = n
		return err == nil
	}
	return false
}

// text sets *s to the string raw, quoted and without escapes (flatObjects
// checked that).
func text(raw []byte, s *string) bool {
	if raw[0] != '"' {
		return false
	}
	*s = string(raw[1 : len(raw)-1])
	return true
}

// flatObjects reads data as a JSON array of objects, calling next at the
// start of each object and set with each key and its raw value: a string,
// quoted, with no escape, control character or invalid UTF-8 in it or in
// the key, or an integer (-?(0|[1-9][0-9]*)). It reports false at
// anything else, or when set does.
func flatObjects(data []byte, next func(), set func(key string, raw []byte) bool) bool {
	i := space(data, 0)
	if i == len(data) || data[i] != '[' {
		return false
	}
	i = space(data, i+1)
	if i < len(data) && data[i] == ']' {
		return space(data, i+1) == len(data)
	}
	for {
		if i == len(data) || data[i] != '{' {
			return false
		}
		next()
		i = space(data, i+1)
		if i < len(data) && data[i] == '}' {
			i++
		} else {
			for {
				end, ok := plainString(data, i)
				if !ok {
					return false
				}
				key := data[i+1 : end-1]
				i = space(data, end)
				if i == len(data) || data[i] != ':' {
					return false
				}
				i = space(data, i+1)
				if i < len(data) && data[i] == '"' {
					end, ok = plainString(data, i)
				} else {
					end, ok = integer(data, i)
				}
				if !ok || !set(string(key), data[i:end]) {
					return false
				}
				i = space(data, end)
				if i < len(data) && data[i] == ',' {
					i = space(data, i+1)
					continue
				}
				if i < len(data) && data[i] == '}' {
					i++
					break
				}
				return false
			}
		}
		i = space(data, i)
		if i < len(data) && data[i] == ',' {
			i = space(data, i+1)
			continue
		}
		if i < len(data) && data[i] == ']' {
			return space(data, i+1) == len(data)
		}
		return false
	}
}

// space returns the index of the first byte at or after i that is not
// JSON whitespace.
func space(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// plainString returns the end of the string that starts at data[i] (after
// its closing quote), if it has no escape, control character or invalid
// UTF-8.
func plainString(data []byte, i int) (int, bool) {
	if i == len(data) || data[i] != '"' {
		return 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return j + 1, utf8.Valid(data[i+1 : j])
		case c == '\\' || c < 0x20:
			return 0, false
		}
	}
	return 0, false
}

// integer returns the end of the integer that starts at data[i].
func integer(data []byte, i int) (int, bool) {
	j := i
	if j < len(data) && data[j] == '-' {
		j++
	}
	switch {
	case j == len(data):
		return 0, false
	case data[j] == '0':
		j++
	case data[j] >= '1' && data[j] <= '9':
		for j < len(data) && data[j] >= '0' && data[j] <= '9' {
			j++
		}
	default:
		return 0, false
	}
	if j < len(data) && (data[j] == '.' || data[j] == 'e' || data[j] == 'E' || data[j] >= '0' && data[j] <= '9') {
		return 0, false
	}
	return j, true
}
