package hub

// Routes returns every pattern s handles.
func (s *Server) Routes() []string { return s.routes }

// SetMaxBody bounds the bodies s takes at n bytes, for a test of the bound.
func (s *Server) SetMaxBody(n int64) { s.maxBody = n }
