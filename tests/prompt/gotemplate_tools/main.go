// gotemplate_tools: Ollama's own code (github.com/ollama/ollama v0.17.4: template.Parse +
// Execute with template.Values{Messages, Tools}, the tag tools.NewParser derives from a
// template, and thinking.InferTags) applied to Go TEMPLATEs that use .Tools / .ToolCalls / .ToolName, writing the
// goldens test_gotemplate_tools.c compares Anvil against (tests/prompt/gotemplate_tools.json).
// CI has no Go; the JSON is committed. Regenerate (from the repository root):
//
//	cd tests/prompt/gotemplate_tools && go run . > ../gotemplate_tools.json
//
// The committed JSON was made against Ollama v0.33.0-rc2 (ollama/ollama fb3076099: its api, auth,
// template, thinking, tools, types, envconfig, format, fs, internal and version folders by git
// archive, then `go mod edit -replace github.com/ollama/ollama=THAT_FOLDER`). v0.17.4, the newest
// on the module proxy, renders the same but for the last template's {{ . }} of a tool (it had no
// templateTool.String, so it printed the struct).
package main

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/template"
	"github.com/ollama/ollama/thinking"
	"github.com/ollama/ollama/tools"
)

// Templates in the styles of Ollama's library models (written for this test).
var templates = []string{
	// Qwen 2.5 style: tools as JSON lines, calls in <tool_call>, results in <tool_response>
	"{{- if .Messages }}{{- if or .System .Tools }}<|im_start|>system\n{{- if .System }}\n{{ .System }}{{- end }}\n" +
		"{{- if .Tools }}\n\n# Tools\n\n<tools>{{- range .Tools }}\n{\"type\": \"function\", \"function\": {\"name\": {{ json .Function.Name }}, \"parameters\": {{ json .Function.Parameters }}}}{{- end }}\n</tools>{{- end }}<|im_end|>\n{{ end }}" +
		"{{- range $i, $_ := .Messages }}{{- $last := eq (len (slice $.Messages $i)) 1 -}}" +
		"{{- if eq .Role \"user\" }}<|im_start|>user\n{{ .Content }}<|im_end|>\n" +
		"{{ else if eq .Role \"assistant\" }}<|im_start|>assistant\n{{ if .Content }}{{ .Content }}{{- else if .ToolCalls }}<tool_call>\n" +
		"{{ range .ToolCalls }}{\"name\": \"{{ .Function.Name }}\", \"arguments\": {{ .Function.Arguments }}}\n{{ end }}</tool_call>{{ end }}{{ if not $last }}<|im_end|>\n{{ end }}" +
		"{{ else if eq .Role \"tool\" }}<|im_start|>user\n<tool_response>\n{{ .Content }}\n</tool_response><|im_end|>\n{{ end }}" +
		"{{- if and (ne .Role \"assistant\") $last }}<|im_start|>assistant\n{{ end }}{{- end }}{{- else }}{{ .Prompt }}{{ end }}",
	// Llama 3.1 style: the tool list printed whole ($.Tools is JSON), bare JSON calls
	"{{- range $i, $_ := .Messages }}{{- $last := eq (len (slice $.Messages $i)) 1 }}" +
		"{{- if eq .Role \"user\" }}<|start_header_id|>user<|end_header_id|>\n\n{{ if and $.Tools $last }}Functions: {{ $.Tools }}\n\n{{ end }}{{ .Content }}<|eot_id|>" +
		"{{- else if eq .Role \"assistant\" }}<|start_header_id|>assistant<|end_header_id|>\n\n{{ if .ToolCalls }}" +
		"{{ range .ToolCalls }}{\"name\": \"{{ .Function.Name }}\", \"parameters\": {{ .Function.Arguments }}}{{ end }}{{ else }}{{ .Content }}{{ end }}<|eot_id|>" +
		"{{- else if eq .Role \"tool\" }}<|start_header_id|>ipython<|end_header_id|>\n\n{{ .Content }}<|eot_id|>{{ end }}" +
		"{{- if $last }}<|start_header_id|>assistant<|end_header_id|>\n\n{{ end }}{{- end }}",
	// Mistral style: [AVAILABLE_TOOLS] and [TOOL_CALLS], tool results by name
	"{{- range $index, $_ := .Messages }}{{- if eq .Role \"user\" }}{{- if and (eq (len (slice $.Messages $index)) 1) $.Tools }}[AVAILABLE_TOOLS] {{ $.Tools }}[/AVAILABLE_TOOLS]{{ end }}" +
		"[INST] {{ .Content }}[/INST]{{- else if eq .Role \"assistant\" }}{{- if .Content }} {{ .Content }}</s>{{- else if .ToolCalls }}[TOOL_CALLS] [" +
		"{{- range .ToolCalls }}{\"name\": \"{{ .Function.Name }}\", \"arguments\": {{ .Function.Arguments }}}{{- end }}]</s>{{- end }}" +
		"{{- else if eq .Role \"tool\" }}[TOOL_RESULTS] {\"name\": \"{{ .ToolName }}\", \"content\": {{ json .Content }}}[/TOOL_RESULTS]{{- end }}{{- end }}",
	// every field: properties ranged as a map, types, enums, descriptions, json of structs, index, len
	"{{ range .Tools }}{{ .Type }} {{ .Function.Name }}: {{ .Function.Description }} req={{ json .Function.Parameters.Required }} n={{ len .Function.Parameters.Properties }}\n" +
		"{{ range $name, $p := .Function.Parameters.Properties }}  {{ $name }} ({{ $p.Type }}) {{ $p.Description }} enum={{ json $p.Enum }}\n{{ end }}" +
		"  props={{ .Function.Parameters.Properties }} json={{ json . }}\n{{ end }}{{ len .Tools }} {{ (index .Tools 0).Function.Name }}\n" +
		"{{ range .Messages }}{{ .Role }}|{{ .ToolName }}|{{ .Thinking }}|{{ range .ToolCalls }}{{ .Function.Index }}:{{ .Function.Name }}{{ .Function.Arguments }}={{ json .Function.Arguments }};{{ range $k, $v := .Function.Arguments }}{{ $k }}={{ $v }},{{ end }}{{ end }}\n{{ end }}",
	// tags
	"{{ if .ToolCalls }}```json\n{{ end }}{{ len .Messages }}{{ range .Messages }}{{ if .ToolCalls }}```json\n{{ end }}{{ end }}",
	"{{ range .Messages }}{{ if .ToolCalls }}\n [ {{ range .ToolCalls }}{{ .Function.Name }}{{ end }}]{{ end }}{{ end }}",
	"{{ if .Tools }}T{{ end }}{{ range .Messages }}{{ if .ToolCalls }}{{ range .ToolCalls }}\n{\"name\": \"{{ .Function.Name }}\"}{{ end }}{{ end }}{{ end }}",
	"{{ if .System }}{{ else }}{{ range .Messages }}{{ if .ToolCalls }}First{{ if .Content }}inner{{ end }}Second{{ end }}{{ end }}{{ end }}",
	"{{ range .Messages }}{{ if .ToolCalls }}{{ .Content }}<function_calls>{{ end }}{{ end }}",
	"{{ range .Messages }}{{ if .ToolCalls }}<|python_tag|>{{ range .ToolCalls }}{{ .Function.Name }}{{ end }}{{ end }}{{ end }}",
	// thinking tags (thinking.InferTags)
	"{{ range .Messages }}{{ if eq .Role \"assistant\" }}{{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}{{ .Content }}{{ end }}{{ end }}",
	"{{ range $i, $m := .Messages }}{{ if $m.Thinking }}\n[THINK] {{ .Thinking }} [/THINK]\n{{ end }}{{ .Content }}{{ end }}",
	"{{ if .Messages }}{{ range .Messages }}<|channel|>{{ .Thinking }}{{ .Content }}<|end|>{{ end }}{{ end }}",
	"{{ range .Messages }}x{{ end }}{{ range .Tools }}<t>{{ .Thinking }}</t>{{ end }}",
	// the values printed themselves (issue 31; older llama3.x templates do): Go's %v, templateTool's
	// String is its JSON, the structs without one print as {field field ...}; not a property with
	// nested properties (Go prints that *ToolPropertiesMap as a pointer address)
	"{{ range .Tools }}{{ . }}\n{{ .Function }}\n{{ .Function.Parameters }}\n" +
		"{{ range $k, $p := .Function.Parameters.Properties }}{{ if ne $k \"where\" }}{{ $k }}={{ $p }}\n{{ end }}{{ end }}{{ end }}" +
		"{{ range .Messages }}{{ .Role }}: {{ .ToolCalls }}{{ range .ToolCalls }} {{ . }} {{ .Function }}{{ end }}\n{{ end }}",
}

const toolsJSON = `[{"type": "function", "function": {"name": "get_weather", "description": "Weather <now> & later",
 "parameters": {"type": "object", "required": ["city"], "properties": {
   "unit": {"type": "string", "enum": ["c", "f"], "description": "Unit", "default": "c"},
   "city": {"type": "string", "description": "The city"},
   "days": {"type": ["integer", "null"]},
   "where": {"type": "object", "properties": {"z": {"type": "number"}, "a": {"type": "number"}}},
   "tags": {"type": "array", "items": {"type": "string", "b": 1, "a": 2}}}}}},
 {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}]`

var conversations = []string{
	`[{"role": "user", "content": "Weather in Paris?"}]`,
	`[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"},
	  {"role": "assistant", "content": "", "thinking": "call it", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"unit": "c", "city": "Paris", "where": {"z": 1, "a": 2}}}}]},
	  {"role": "tool", "content": "18C \"sunny\"", "tool_name": "get_weather"}]`,
	`[{"role": "user", "content": "Two?"},
	  {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "now", "arguments": {}}}, {"function": {"index": 1, "name": "get_weather", "arguments": {"city": "Rome"}}}]},
	  {"role": "tool", "content": "noon", "tool_name": "now"}, {"role": "tool", "content": "25C", "tool_name": "get_weather"},
	  {"role": "assistant", "content": "Noon, 25C."}, {"role": "user", "content": "Thanks"}]`,
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	var ts api.Tools
	must(json.Unmarshal([]byte(toolsJSON), &ts))
	type render struct {
		Template int    `json:"template"`
		Conv     int    `json:"conv"`
		Tools    bool   `json:"tools"`
		Out      string `json:"out,omitempty"`
		Error    bool   `json:"error,omitempty"`
	}
	out := struct {
		Templates     []string          `json:"templates"`
		Tools         json.RawMessage   `json:"tools"` // as written: key order matters
		Conversations []json.RawMessage `json:"conversations"`
		Tags          []string          `json:"tags"`
		ThinkTags     [][2]string       `json:"think_tags"`
		Renders       []render          `json:"renders"`
	}{Templates: templates, Tools: json.RawMessage(toolsJSON)}
	for _, c := range conversations {
		out.Conversations = append(out.Conversations, json.RawMessage(c))
	}
	for ti, text := range templates {
		tmpl, err := template.Parse(text)
		must(err)
		p := tools.NewParser(tmpl.Template, ts)
		out.Tags = append(out.Tags, reflect.ValueOf(p).Elem().FieldByName("tag").String())
		open, close := thinking.InferTags(tmpl.Template)
		out.ThinkTags = append(out.ThinkTags, [2]string{open, close})
		for ci, c := range conversations {
			for _, withTools := range []bool{false, true} {
				var msgs []api.Message
				must(json.Unmarshal([]byte(c), &msgs))
				v := template.Values{Messages: msgs}
				if withTools {
					v.Tools = ts
				}
				var b bytes.Buffer
				r := render{Template: ti, Conv: ci, Tools: withTools}
				if err := tmpl.Execute(&b, v); err != nil {
					r.Error = true
				} else {
					r.Out = b.String()
				}
				out.Renders = append(out.Renders, r)
			}
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	must(enc.Encode(out))
}
