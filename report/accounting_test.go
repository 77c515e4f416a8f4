package report

import (
	"testing"

	"github.com/wirepath/wirepath/causal/assembly"
	"github.com/wirepath/wirepath/causal/convolution"
	"github.com/wirepath/wirepath/causal/linking"
	"github.com/wirepath/wirepath/causal/nesting"
)

// TestEngineStages checks that the summary knows each engine's counters by
// the stage the engine writes them under, its name.
func TestEngineStages(t *testing.T) {
	for _, c := range []struct{ here, engine string }{
		{stageLinking, linking.Name}, {stageNesting, nesting.Name}, {stageConvolution, convolution.Name}, {stageAssembly, assembly.Name},
	} {
		if c.here != c.engine {
			t.Errorf("the summary knows stage %q, the engine counts under %q", c.here, c.engine)
		}
	}
}
