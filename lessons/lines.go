package lessons

import "go.yaml.in/yaml/v3"

// scenarioLines finds where a scenario's steps, actions and checks are
// written, so a problem can be reported as scenario.yaml:LINE. It reads the
// same bytes as the decoder; a scenario that does not parse has no lines
// (the decoder's own error names one).
type scenarioLines struct{ steps []*yaml.Node }

func lineIndex(raw []byte) scenarioLines {
	var doc yaml.Node
	if yaml.Unmarshal(raw, &doc) != nil || len(doc.Content) == 0 {
		return scenarioLines{}
	}
	if steps := mapValue(doc.Content[0], "steps"); steps != nil && steps.Kind == yaml.SequenceNode {
		return scenarioLines{steps: steps.Content}
	}
	return scenarioLines{}
}

// step is the line of step i's entry.
func (s scenarioLines) step(i int) int {
	if i < 0 || i >= len(s.steps) {
		return 0
	}
	return s.steps[i].Line
}

// item is the line of element k of step i's list field ("actions" or
// "check"), or the step's line when it cannot be found.
func (s scenarioLines) item(i int, field string, k int) int {
	if i < 0 || i >= len(s.steps) {
		return 0
	}
	if list := mapValue(s.steps[i], field); list != nil && list.Kind == yaml.SequenceNode && k < len(list.Content) {
		return list.Content[k].Line
	}
	return s.steps[i].Line
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
