package convolution

import "context"

var bgCtx = context.Background()

// mustNew returns a convolution engine with options the test knows are
// valid.
func mustNew(opt Options) *Engine {
	e, err := New(opt)
	if err != nil {
		panic(err)
	}
	return e
}
