package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskgraph/taskgraph"
	"github.com/taskgraph/taskgraph/agenttools"
)

// version is reported to MCP clients.
const version = "0.1.0"

// newMCPServer serves the agenttools task tools — the same names, schemas
// and texts — as MCP tools. A bad call is a tool result with IsError set and
// the same "Error: ..." text a model gets from agenttools.
func newMCPServer(store taskgraph.Store, owner string) *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "taskgraph", Version: version}, nil)
	for _, tool := range agenttools.New(store, agenttools.WithOwner(owner)).List() {
		server.AddTool(&mcp.Tool{Name: tool.Name, Description: tool.Description, InputSchema: tool.InputSchema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				text, err := tool.Call(ctx, json.RawMessage(req.Params.Arguments))
				if err != nil {
					return nil, err
				}
				return &mcp.CallToolResult{
					Content: []mcp.Content{&mcp.TextContent{Text: text}},
					IsError: strings.HasPrefix(text, "Error: "),
				}, nil
			})
	}
	return server
}

func cmdMCP(e *env) error {
	return e.withNoArgs(func(s store) error {
		return newMCPServer(s, e.owner).Run(e.ctx, &mcp.StdioTransport{})
	})
}
