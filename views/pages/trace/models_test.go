package trace

import "testing"

// A step's state and its class say the same thing: down wins over found.
func TestStepStateAndTone(t *testing.T) {
	for _, c := range []struct {
		step        StepView
		state, tone string
	}{
		{StepView{}, "not found", "timeline-missing"},
		{StepView{Found: true}, "found", "timeline-found"},
		{StepView{Down: true}, "down", "timeline-down"},
		{StepView{Down: true, Found: true}, "down", "timeline-down"},
	} {
		if st, tone := stepState(c.step), stepTone(c.step); st != c.state || tone != c.tone {
			t.Errorf("%+v: %q %q, want %q %q", c.step, st, tone, c.state, c.tone)
		}
	}
}
