// promql-names parses PromQL expressions with Prometheus's own parser and
// prints the metric names each one selects. It reads one JSON string (an
// expression) a line on stdin and writes one JSON object a line on stdout:
// {"names": ["a", "b"]} (sorted, unique; "" for a selector without a
// metric name) or {"error": "..."} when the expression does not parse.
// test/prometheus/dashboard_test.cc checks the dashboard's queries with it.
// Built by test/rig/build/prometheus.sh in the wrapper module of the
// Prometheus version the rig pins, so it parses what that Prometheus does.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type result struct {
	Names []string `json:"names,omitempty"`
	Error string   `json:"error,omitempty"`
}

func names(expr parser.Expr) []string {
	seen := map[string]bool{}
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		seen[name] = true
		return nil
	})
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func main() {
	p := parser.NewParser(parser.Options{})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var query string
		var r result
		if err := json.Unmarshal(in.Bytes(), &query); err != nil {
			r.Error = "not a JSON string: " + err.Error()
		} else if expr, err := p.ParseExpr(query); err != nil {
			r.Error = err.Error()
		} else {
			r.Names = names(expr)
		}
		if err := out.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
