// What the stores and servers log: to stderr, at the level $TASKGRAPH_LOG
// names.

package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// logger is what the stores, the board and the MCP server log through
// (taskgraph.WithLogger, pgstore.WithLogger, board.WithLogger,
// mcp.ServerOptions.Logger): run sets it from $TASKGRAPH_LOG.
var logger = slog.New(slog.DiscardHandler)

// newLogger returns the logger $TASKGRAPH_LOG asks for, writing text to w:
// debug, info, warn (the default: what a person should know, such as a
// watch that fell back to polling) or error; off logs nothing.
func newLogger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	switch v := strings.ToLower(os.Getenv("TASKGRAPH_LOG")); v {
	case "off":
		return slog.New(slog.DiscardHandler), nil
	case "":
		level = slog.LevelWarn
	default:
		if err := level.UnmarshalText([]byte(v)); err != nil {
			return nil, fmt.Errorf("$TASKGRAPH_LOG=%s: want debug, info, warn, error or off", v)
		}
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
}
