package powerloss

func oneOp() error { return nil }
