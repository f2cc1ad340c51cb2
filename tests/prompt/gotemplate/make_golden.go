// make_golden: renders chat templates with Go's own text/template, shaped the way Ollama
// feeds them (template/template.go: a map[string]any with missingkey=zero, the "json"
// function, {{ .Response }} appended to templates using neither .Messages nor .Response,
// consecutive same-role messages collated, per-turn rendering with the last turn cut after
// the first .Response field), and writes the golden files tests/prompt/test_gotemplate.c and
// tests/prompt/test_prompt.c compare Anvil against. CI has no Go; the JSON files are committed.
//
// Regenerate (from the repository root):
//
//	cd tests/gotemplate && go run make_golden.go -templates ../data/gotemplate/templates -out ../data/gotemplate
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode/utf8"
)

// Message mirrors the fields of Ollama's api.Message a template can reach.
type Message struct {
	Role      string
	Content   string
	Thinking  string
	Images    [][]byte
	ToolCalls []ToolCall
	ToolName  string
}

type ToolCall struct {
	Function struct {
		Name      string
		Arguments map[string]any
	}
}

type Tool struct {
	Function map[string]any
}

var funcs = template.FuncMap{
	"json": func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	},
}

// ---- Ollama's template handling, re-implemented for the generator -------------------

func identifiers(n parse.Node) []string {
	var out []string
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			out = append(out, identifiers(c)...)
		}
	case *parse.ActionNode:
		out = identifiers(n.Pipe)
	case *parse.IfNode:
		out = identifiers(&n.BranchNode)
	case *parse.RangeNode:
		out = identifiers(&n.BranchNode)
	case *parse.WithNode:
		out = identifiers(&n.BranchNode)
	case *parse.BranchNode:
		out = identifiers(n.Pipe)
		out = append(out, identifiers(n.List)...)
		if n.ElseList != nil {
			out = append(out, identifiers(n.ElseList)...)
		}
	case *parse.PipeNode:
		for _, c := range n.Cmds {
			for _, a := range c.Args {
				out = append(out, identifiers(a)...)
			}
		}
	case *parse.FieldNode:
		out = n.Ident
	case *parse.VariableNode:
		out = n.Ident
	}
	return out
}

func hasVar(t *template.Template, name string) bool {
	for _, id := range identifiers(t.Tree.Root) {
		if strings.ToLower(id) == name {
			return true
		}
	}
	return false
}

func parseOllama(text string) (*template.Template, error) {
	t, err := template.New("").Option("missingkey=zero").Funcs(funcs).Parse(text)
	if err != nil {
		return nil, err
	}
	if !hasVar(t, "messages") && !hasVar(t, "document") && !hasVar(t, "response") {
		t.Tree.Root.Nodes = append(t.Tree.Root.Nodes, &parse.ActionNode{NodeType: parse.NodeAction,
			Pipe: &parse.PipeNode{NodeType: parse.NodePipe, Cmds: []*parse.CommandNode{{NodeType: parse.NodeCommand,
				Args: []parse.Node{&parse.FieldNode{NodeType: parse.NodeField, Ident: []string{"Response"}}}}}}})
	}
	return t, nil
}

func usesMessages(t *template.Template) bool { return hasVar(t, "messages") || hasVar(t, "document") }

// cutAfterResponse drops every node visited after the first field naming Response in a
// pre-order walk that skips branch conditions (what Ollama does for the last turn).
func cutAfterResponse(root *parse.ListNode) *parse.ListNode {
	cut := false
	drop := func(n parse.Node) bool {
		if f, ok := n.(*parse.FieldNode); ok && slices.Contains(f.Ident, "Response") {
			cut = true
			return false
		}
		return cut
	}
	var walk func(n parse.Node) parse.Node
	walk = func(n parse.Node) parse.Node {
		if drop(n) {
			return nil
		}
		switch x := n.(type) {
		case *parse.ListNode:
			var kept []parse.Node
			for _, c := range x.Nodes {
				if k := walk(c); k != nil {
					kept = append(kept, k)
				}
			}
			x.Nodes = kept
		case *parse.IfNode:
			walk(&x.BranchNode)
		case *parse.WithNode:
			walk(&x.BranchNode)
		case *parse.RangeNode:
			walk(&x.BranchNode)
		case *parse.BranchNode:
			if l := walk(x.List); l != nil {
				x.List = l.(*parse.ListNode)
			} else {
				panic("cut inside a branch list")
			}
			if x.ElseList != nil {
				if l := walk(x.ElseList); l != nil {
					x.ElseList = l.(*parse.ListNode)
				} else {
					panic("cut before an else list")
				}
			}
		case *parse.ActionNode:
			p := walk(x.Pipe)
			if p == nil {
				return nil
			}
			x.Pipe = p.(*parse.PipeNode)
		case *parse.PipeNode:
			var cmds []*parse.CommandNode
			for _, c := range x.Cmds {
				var args []parse.Node
				for _, a := range c.Args {
					if k := walk(a); k != nil {
						args = append(args, k)
					}
				}
				if len(args) == 0 {
					return nil
				}
				c.Args = args
				cmds = append(cmds, c)
			}
			if len(cmds) == 0 {
				return nil
			}
			x.Cmds = cmds
		}
		return n
	}
	return walk(root.CopyList()).(*parse.ListNode)
}

func lastTurnTemplate(t *template.Template) (*template.Template, error) {
	tree := &parse.Tree{Root: cutAfterResponse(t.Tree.Root)}
	return template.New("").Option("missingkey=zero").Funcs(funcs).AddParseTree("", tree)
}

type vars struct {
	Mode       string     `json:"mode"` // "messages" or "turn"
	System     string     `json:"system"`
	Prompt     string     `json:"prompt"`
	Response   string     `json:"response"`
	Messages   []jmessage `json:"messages,omitempty"`
	Think      bool       `json:"think"`
	IsThinkSet bool       `json:"is_think_set"`
}

type jmessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func toMessages(ms []jmessage) []*Message {
	out := []*Message{}
	for _, m := range ms {
		out = append(out, &Message{Role: m.Role, Content: m.Content})
	}
	return out
}

func dataOf(v vars) map[string]any {
	if v.Mode == "messages" {
		return map[string]any{"System": v.System, "Messages": toMessages(v.Messages), "Tools": []Tool(nil),
			"Response": "", "Think": v.Think, "IsThinkSet": v.IsThinkSet, "Query": "", "Document": "",
			"Instruction": ""}
	}
	return map[string]any{"System": v.System, "Prompt": v.Prompt, "Response": v.Response, "Think": v.Think,
		"IsThinkSet": v.IsThinkSet}
}

func execute(t *template.Template, data map[string]any) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	var b strings.Builder
	err = t.Execute(&b, data)
	return b.String(), err
}

// collate: consecutive messages of one role (not "tool") merged with "\n\n"; the system
// messages joined with "\n\n".
func collate(ms []jmessage) (string, []jmessage) {
	var system []string
	var out []jmessage
	for _, m := range ms {
		if m.Role == "system" {
			system = append(system, m.Content)
		}
		if len(out) > 0 && out[len(out)-1].Role == m.Role && m.Role != "tool" {
			out[len(out)-1].Content += "\n\n" + m.Content
		} else {
			out = append(out, m)
		}
	}
	return strings.Join(system, "\n\n"), out
}

// ollamaExecute: Ollama's Template.Execute for a chat (no suffix).
func ollamaExecute(text string, msgs []jmessage) (string, error) {
	t, err := parseOllama(text)
	if err != nil {
		return "", err
	}
	system, col := collate(msgs)
	if usesMessages(t) {
		return execute(t, dataOf(vars{Mode: "messages", System: system, Messages: col}))
	}
	var b strings.Builder
	var sys, prompt, response string
	flush := func() error {
		out, err := execute(t, dataOf(vars{Mode: "turn", System: sys, Prompt: prompt, Response: response}))
		b.WriteString(out)
		sys, prompt, response = "", "", ""
		return err
	}
	for _, m := range col {
		switch m.Role {
		case "system":
			if prompt != "" || response != "" {
				if err := flush(); err != nil {
					return "", err
				}
			}
			sys = m.Content
		case "user":
			if response != "" {
				if err := flush(); err != nil {
					return "", err
				}
			}
			prompt = m.Content
		case "assistant":
			response = m.Content
		}
	}
	lt, err := lastTurnTemplate(t)
	if err != nil {
		return "", err
	}
	out, err := execute(lt, dataOf(vars{Mode: "turn", System: sys, Prompt: prompt, Response: response}))
	if err != nil {
		return "", err
	}
	return b.String() + out, nil
}

// ---- test data ----------------------------------------------------------------------

var conversations = []struct {
	name string
	msgs []jmessage
}{
	{"empty", nil},
	{"user", []jmessage{{"user", "Hello"}}},
	{"system-user", []jmessage{{"system", "You are a helpful assistant."}, {"user", "Hello"}}},
	{"multi", []jmessage{{"user", "Hi"}, {"assistant", "Hello! How can I help?"}, {"user", "Tell me a joke"}}},
	{"system-multi", []jmessage{{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."},
		{"user", "What is 2+2?"}, {"assistant", "4"}, {"user", "And 3+3?"}}},
	{"ends-assistant", []jmessage{{"user", "Write a haiku"}, {"assistant", "Autumn moonlight"}}},
	{"unicode", []jmessage{{"system", "Réponds en français, s'il te plaît. 日本語もOK"},
		{"user", "Grüße, 世界! 🙂 ñ"}}},
	{"special", []jmessage{{"user", "{{ .System }} and {{- end }} `raw` \"quotes\" <tags> & \\ backslash\n\ttab {{/* x */}}"}}},
	{"consecutive", []jmessage{{"user", "a"}, {"user", "b"}, {"assistant", "c"}, {"assistant", "d"}, {"user", "e"}}},
	{"two-systems", []jmessage{{"system", "s1"}, {"user", "u1"}, {"assistant", "a1"}, {"system", "s2"}, {"user", "u2"}}},
	{"whitespace", []jmessage{{"system", "  sys  "}, {"user", "  padded  \n"}, {"assistant", "\nreply\n"},
		{"user", "\n"}}},
	{"tool", []jmessage{{"user", "weather?"}, {"assistant", ""}, {"tool", "sunny"}, {"tool", "22C"}}},
	{"empty-content", []jmessage{{"system", ""}, {"user", ""}}},
}

var turnVars = []vars{
	{Mode: "turn", Prompt: "Hi"},
	{Mode: "turn", System: "Be brief.", Prompt: "Hi"},
	{Mode: "turn", Prompt: "Hi", Response: "Hello!"},
	{Mode: "turn", System: "Système ☃", Prompt: "¿Qué? 🙂", Response: "R\n"},
	{Mode: "turn", System: "{{ .Prompt }}", Prompt: "`x` \"y\" \\z"},
	{Mode: "turn"},
}

// Small templates that exercise the language itself.
var features = []struct{ name, text string }{
	{"trim", "a  {{- .System -}}  b\n{{- \"x\" }}\n  {{ \"y\" -}}\n  z{{- 3 }} {{-3}}"},
	{"comment", "A{{/* c */}}B {{- /* c2 */ -}} C {{/* multi\nline */ -}}\n D"},
	{"with", "{{ with .System }}[{{ . }}]{{ else with .Response }}<{{ . }}>{{ else }}none{{ end }}"},
	{"range-else", "{{ range .Messages }}{{ .Role }};{{ else }}no messages{{ end }}"},
	{"range-break", "{{ range $i, $m := .Messages }}{{ if eq $i 3 }}{{ break }}{{ end }}{{ if eq $m.Role \"assistant\" }}{{ continue }}{{ end }}{{ $i }}:{{ $m.Content }};{{ end }}"},
	{"dollar", "{{ range .Messages }}{{ $.System }}/{{ .Content }}|{{ end }}"},
	{"vars", "{{ $x := 1 }}{{ $s := .System }}{{ range .Messages }}{{ $x = len .Content }}{{ $y := 5 }}{{ end }}{{ $x }} {{ $s }}"},
	{"funcs", "{{ len .System }} {{ lt 1 2 }} {{ ge 2 3 }} {{ le \"a\" \"b\" }} {{ gt \"b\" \"a\" }} {{ ne 1 2 }} {{ not .System }} [{{ and .System .Response }}] [{{ or .Response .System }}] {{ eq .Think false }} {{ eq 1 2 3 1 }} {{ and 1 0 2 }} {{ or 0 \"\" }}"},
	{"slice-index", "{{ if ge (len .System) 3 }}{{ slice .System 1 3 }} {{ index .System 0 }} {{ slice .System 2 }} {{ slice .System }}{{ end }}"},
	{"print", "{{ print 1 2 \"a\" \"b\" 3 true }}|{{ println .System 1 }}|{{ print }}|{{ .System | len }}|{{ \"x\" | print \"y\" }}|{{ print .Nope }}"},
	{"json", "{{ json .System }} {{ json .Tools }} {{ json 42 }} {{ json true }} {{ json .Nope }} {{ json \"<a&b>\\n\\t\\\"q\\\" \\u2028 é\" }}"},
	{"missing", "[{{ .Prompt }}][{{ .Nope }}]{{ if .Nope }}yes{{ else }}no{{ end }} {{ eq .Nope nil }} {{ eq .Nope \"\" }} {{ not .Nope }}"},
	{"strings", "{{ \"a\\tb\\n\\x41\\u00e9\\U0001F600\\101\\\\\\\"\" }}{{ `raw\\n{{` }}{{ \"\" }}"},
	{"numbers", "{{ -1 }} {{ 0x1F }} {{ 0o17 }} {{ 017 }} {{ 1_000 }} {{ +5 }} {{ 0 }}"},
	{"range-int", "{{ range 3 }}{{ . }}{{ end }}{{ range $i := 2 }}<{{ $i }}>{{ end }}{{ range 0 }}x{{ else }}zero{{ end }}"},
	{"chain", "{{ if .Messages }}{{ (index .Messages 0).Role }} {{ (slice .Messages 1) | len }} {{ (index $.Messages 0).Content }}{{ end }}"},
	{"nested-last", "{{ range $i, $m := .Messages }}{{ $last := eq (len (slice $.Messages $i)) 1 }}{{ if $last }}LAST:{{ end }}{{ $m.Content }}{{ if eq $i (len (slice $.Messages 1)) }}!{{ end }};{{ end }}"},
	{"if-decl", "{{ if $n := len .Messages }}{{ $n }} messages{{ else }}none {{ $n }}{{ end }}"},
	{"tools", "{{ if .Tools }}T{{ else }}noT{{ end }} {{ .Tools }} {{ len .Tools }}{{ range .Tools }}{{ .Function }}{{ end }}"},
	{"msgfields", "{{ range .Messages }}[{{ .Thinking }}|{{ .ToolName }}|{{ .Images }}|{{ .ToolCalls }}|{{ len .ToolCalls }}]{{ end }}"},
	{"think", "{{ if .Think }}think{{ end }}{{ if .IsThinkSet }}set{{ end }}{{ .Think }} {{ .IsThinkSet }}"},
	{"else-if-chain", "{{ range .Messages }}{{ if eq .Role \"system\" }}S{{ else if eq .Role \"user\" }}U{{ else if eq .Role \"assistant\" }}A{{ else }}?{{ end }}{{ end }}"},
	{"parens", "{{ if and (not (eq .System \"\")) (or (eq (len .System) 0) (gt (len .System) 2)) }}long{{ else }}short{{ end }}"},
	{"pipeline", "{{ .System | len | eq 0 }} {{ \"abc\" | slice | len }} {{ 3 | lt 2 }}"},
	{"turn-cut-pipe", "<{{ .Prompt }}>{{ .Response | print }}tail{{ .Response }}end"},
	{"response-in-paren", "{{ if .Prompt }}Q: {{ .Prompt }}{{ end }} A: {{ (print .Response) }} after"},
	{"shadow", "{{ $x := 1 }}{{ range .Messages }}{{ $x := 2 }}{{ $x }}{{ end }}{{ $x }}{{ with $y := .System }}<{{ $y }}>{{ end }}"},
	{"nospace", "{{.System}}|{{.Messages|len}}|{{len .System|print}}|{{$.System}}{{range $m:=.Messages}}{{$m.Role}}{{end}}"},
	{"with-dot", "{{ with .Messages }}{{ with index . 0 }}{{ .Role }}:{{ $.System }}{{ end }}{{ else }}-{{ end }}"},
	{"root-map", "{{ len $ }} {{ index $ \"System\" }} {{ index $ \"Nope\" }}"},
	{"crlf", "a \r\n{{- .System -}}\r\n b{{ \"\" }}\r\n"},
	{"one-var-range", "{{ range $m := .Messages }}{{ $m.Role }}={{ len $m.Content }} {{ end }}"},
	{"err-scope", "{{ if true }}{{ $y := 3 }}{{ end }}{{ $y }}"},
	{"err-range-var-scope", "{{ range $i, $m := .Messages }}{{ end }}{{ $i }}"},
	{"err-trim-nospace", "{{-/* x */-}}"},
	{"err-assign-undeclared", "{{ $z = 1 }}"},
	// errors (Go refuses them; so must Anvil)
	{"err-unclosed-action", "Hello {{ .System "},
	{"err-unknown-func", "{{ foo .System }}"},
	{"err-missing-end", "{{ if .System }}x"},
	{"err-unexpected-end", "x{{ end }}"},
	{"err-bad-comment", "{{ /* c */ }}"},
	{"err-unclosed-comment", "{{/* c "},
	{"err-undefined-var", "{{ $x }}"},
	{"err-msg-field", "{{ range .Messages }}{{ .Nope }}{{ end }}x"},
	{"err-nil-field", "{{ .Nope.X }}"},
	{"err-eq-types", "{{ eq .System 1 }}"},
	{"err-index-oob", "{{ index .Messages 99 }}"},
	{"err-break-outside", "{{ break }}"},
	{"err-else-twice", "{{ if 1 }}a{{ else }}b{{ else }}c{{ end }}"},
	{"err-non-func-arg", "{{ .System 1 }}"},
	{"err-unterminated-string", "{{ \"abc }}"},
	{"err-empty-action", "{{ }}"},
	{"err-pipe-literal", "{{ .System | \"x\" }}"},
	{"err-else-if-in-range", "{{ range .Messages }}a{{ else if 1 }}b{{ end }}{{ end }}"},
	{"err-bad-escape", "{{ \"\\q\" }}"},
	{"err-lt-bool", "{{ lt true false }}"},
	{"err-len-int", "{{ len 3 }}"},
	{"err-slice-range", "{{ slice .System 5 2 }}"},
	{"err-declare-twice-range", "{{ if $a, $b := 1 }}{{ end }}"},
	{"err-not-args", "{{ not 1 2 }}"},
}

type renderCase struct {
	Template string `json:"template"`
	Vars     vars   `json:"vars"`
	LastTurn bool   `json:"last_turn"`
	Output   string `json:"output"`
	// JSON cannot carry invalid UTF-8 (a byte slice of a multi-byte character): then the
	// exact bytes are here too.
	OutputBytes []int  `json:"output_bytes,omitempty"`
	Error       string `json:"error,omitempty"`
}

type promptCase struct {
	Template     string     `json:"template"`
	Conversation string     `json:"conversation"`
	Messages     []jmessage `json:"messages"`
	Output       string     `json:"output"`
	Error        string     `json:"error,omitempty"`
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "make_golden:", err)
		os.Exit(1)
	}
}

func writeJSON(path string, v any) {
	f, err := os.Create(path)
	must(err)
	enc := json.NewEncoder(f)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	must(enc.Encode(v))
	must(f.Close())
}

func main() {
	dir := flag.String("templates", "../data/gotemplate/templates", "folder of *.gotmpl")
	out := flag.String("out", "../data/gotemplate", "where render.json and prompt.json go")
	flag.Parse()

	type named struct{ name, text string }
	var files []named
	paths, err := filepath.Glob(filepath.Join(*dir, "*.gotmpl"))
	must(err)
	sort.Strings(paths)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		must(err)
		files = append(files, named{strings.TrimSuffix(filepath.Base(p), ".gotmpl"), string(b)})
	}
	all := append([]named{}, files...)
	for _, f := range features {
		all = append(all, named{f.name, f.text})
	}

	var renders []renderCase
	for _, tm := range all {
		t, perr := parseOllama(tm.text)
		var sets []vars
		for _, c := range conversations {
			sys, _ := collate(c.msgs)
			sets = append(sets, vars{Mode: "messages", System: sys, Messages: c.msgs})
		}
		sets = append(sets, vars{Mode: "messages", System: "S", Messages: conversations[3].msgs, Think: true,
			IsThinkSet: true}, vars{Mode: "messages", Messages: conversations[3].msgs, IsThinkSet: true})
		sets = append(sets, turnVars...)
		for _, v := range sets {
			for _, last := range []bool{false, true} {
				if last && v.Mode != "turn" {
					continue
				}
				rc := renderCase{Template: tm.name, Vars: v, LastTurn: last}
				if perr != nil {
					rc.Error = perr.Error()
				} else {
					tt := t
					if last {
						tt, err = lastTurnTemplate(t)
						must(err)
					}
					o, err := execute(tt, dataOf(v))
					if err != nil {
						rc.Error = err.Error()
					} else {
						rc.Output = o
						if !utf8.ValidString(o) {
							for _, c := range []byte(o) {
								rc.OutputBytes = append(rc.OutputBytes, int(c))
							}
						}
					}
				}
				renders = append(renders, rc)
				if perr != nil {
					break
				}
			}
			if perr != nil {
				break
			}
		}
	}

	var prompts []promptCase
	for _, tm := range files {
		for _, c := range conversations {
			pc := promptCase{Template: tm.name, Conversation: c.name, Messages: c.msgs}
			if pc.Messages == nil {
				pc.Messages = []jmessage{}
			}
			o, err := ollamaExecute(tm.text, c.msgs)
			if err != nil {
				pc.Error = err.Error()
			} else {
				pc.Output = o
			}
			prompts = append(prompts, pc)
		}
	}
	texts := map[string]string{}
	for _, tm := range all {
		texts[tm.name] = tm.text
	}
	writeJSON(filepath.Join(*out, "render.json"), map[string]any{"templates": texts, "cases": renders})
	writeJSON(filepath.Join(*out, "prompt.json"), map[string]any{"templates": texts, "cases": prompts})
	fmt.Printf("make_golden: %d render cases, %d prompt cases\n", len(renders), len(prompts))
}
