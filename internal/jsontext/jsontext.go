// Package jsontext appends JSON strings and times exactly as encoding/json
// writes them, for the encoders written by hand where reflection over
// hundreds of thousands of values costs too much (the board's snapshot,
// the command line's --json lists).
package jsontext

import (
	"time"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped as encoding/json does:
// with escapeHTML, < > & too (json.Marshal's default; an Encoder's
// SetEscapeHTML(false) is without); U+2028 and U+2029 always; invalid
// UTF-8 becomes U+FFFD.
func AppendString(b []byte, s string, escapeHTML bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!escapeHTML || (c != '<' && c != '>' && c != '&')) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendTime appends t as time.Time's MarshalJSON does for a time it
// accepts (see TimeOK).
func AppendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// TimeOK reports whether time.Time's MarshalJSON accepts t: a year from 0
// to 9999 and a zone offset within a day.
func TimeOK(t time.Time) bool {
	y := t.Year()
	_, off := t.Zone()
	return y >= 0 && y <= 9999 && off > -24*3600 && off < 24*3600
}
