// Verified completion on the command line: the flags that name a task's
// check and acceptance items.

package main

import "strings"

// textList is a flag given once per item, each kept whole (commas too):
// acceptance items are sentences.
type textList []string

func (l *textList) String() string { return strings.Join(*l, "; ") }

func (l *textList) Set(v string) error {
	*l = append(*l, v)
	return nil
}
