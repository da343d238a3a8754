package hub

// Routes returns every pattern s handles.
func (s *Server) Routes() []string { return s.routes }

// SetMaxBody bounds the bodies s takes at n bytes, for a test of the bound.
func (s *Server) SetMaxBody(n int64) { s.maxBody = n }

// Recalled returns how many retries s answered from the store's keys.
func (s *Server) Recalled() int64 { return s.recalled.Load() }
