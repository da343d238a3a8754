// Approval gates through the hub: approving and rejecting take an admin's
// token (an agent's never can), as does setting the approval policy;
// anyone may read it.

package hub

import (
	"context"
	"net/http"

	tg "github.com/taskgraph-dev/taskgraph"
)

// ApproveRequest is the body of POST /v1/tasks/{id}/approve and
// /reject: who approves or rejects (an admin's token may name anyone, as
// it may name any owner), and why, for a rejection.
type ApproveRequest struct {
	By     string `json:",omitempty"`
	Reason string `json:",omitempty"`
}

var (
	_ tg.Approver        = (*Client)(nil)
	_ tg.ApprovalPolicer = (*Client)(nil)
)

// routeApproval adds the endpoints of approval.
func (s *Server) routeApproval() {
	s.handle("POST /v1/tasks/{id}/approve", admin, withBody(func(r *request, c ApproveRequest) (any, error) {
		return r.st.Approve(r.Context(), r.id, c.By)
	}))
	s.handle("POST /v1/tasks/{id}/reject", admin, withBody(func(r *request, c ApproveRequest) (any, error) {
		return r.st.Reject(r.Context(), r.id, c.By, c.Reason)
	}))
	s.handle("GET /v1/approval", read, func(r *request) (any, error) { return r.st.ApprovalPolicy(r.Context()) })
	s.handle("PUT /v1/approval", admin, withBody(func(r *request, p tg.ApprovalPolicy) (any, error) {
		return nil, r.st.SetApprovalPolicy(r.Context(), p)
	}))
}

func (g *guarded) Approve(ctx context.Context, id tg.ID, by string) (tg.Task, error) {
	if err := g.who.may(admin); err != nil {
		return tg.Task{}, err
	}
	return g.s.Approve(ctx, id, by)
}

func (g *guarded) Reject(ctx context.Context, id tg.ID, by, reason string) (tg.Task, error) {
	if err := g.who.may(admin); err != nil {
		return tg.Task{}, err
	}
	return g.s.Reject(ctx, id, by, reason)
}

func (g *guarded) ApprovalPolicy(ctx context.Context) (tg.ApprovalPolicy, error) {
	return g.s.ApprovalPolicy(ctx)
}

func (g *guarded) SetApprovalPolicy(ctx context.Context, p tg.ApprovalPolicy) error {
	if err := g.who.may(admin); err != nil {
		return err
	}
	return g.s.SetApprovalPolicy(ctx, p)
}

// Approve implements tg.Approver: an admin's token only.
func (c *Client) Approve(ctx context.Context, id tg.ID, by string) (tg.Task, error) {
	var t tg.Task
	err := c.call(ctx, http.MethodPost, taskPath(id)+"/approve", nil, ApproveRequest{By: by}, &t,
		func() error { return tg.Rules.ApproveArgs(by) })
	return t, err
}

// Reject implements tg.Approver: an admin's token only.
func (c *Client) Reject(ctx context.Context, id tg.ID, by, reason string) (tg.Task, error) {
	var t tg.Task
	err := c.call(ctx, http.MethodPost, taskPath(id)+"/reject", nil, ApproveRequest{By: by, Reason: reason}, &t,
		func() error { return tg.Rules.RejectArgs(by, reason) })
	return t, err
}

// SetApprovalPolicy implements tg.ApprovalPolicer: an admin's token only.
func (c *Client) SetApprovalPolicy(ctx context.Context, p tg.ApprovalPolicy) error {
	return c.call(ctx, http.MethodPut, "/v1/approval", nil, p, nil, func() error { _, err := tg.Rules.ApprovalPolicyArgs(p); return err })
}

// ApprovalPolicy implements tg.ApprovalPolicer.
func (c *Client) ApprovalPolicy(ctx context.Context) (tg.ApprovalPolicy, error) {
	var p tg.ApprovalPolicy
	err := c.call(ctx, http.MethodGet, "/v1/approval", nil, nil, &p, nil)
	return p, err
}
