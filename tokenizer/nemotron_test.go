package tokenizer

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

// nemotron3Like is a stand-in for Nemotron-3's chat template, not the
// checkpoint's file (which no source reachable here holds): the parts the
// public copies of the Nemotron-3 family's templates share (Nemotron-3-
// Super's, Nemotron-3.5-Lightning's): ChatML turns, the tools announced with
// Qwen3-Coder's example call, calls written as <tool_call><function=NAME>
// <parameter=K>V</parameter></function></tool_call>, enable_thinking (unset:
// on) opening the generation prompt's <think> or closing it empty.
const nemotron3Like = `{%- set enable_thinking = enable_thinking if enable_thinking is defined else True %}
{%- if tools %}<|im_start|>system
# Tools

If you choose to call a function ONLY reply in the following format with NO suffix:

<tool_call>
<function=example_function_name>
<parameter=example_parameter_1>
value_1
</parameter>
</function>
</tool_call><|im_end|>
{% endif %}
{%- for m in messages %}
{%- if m.role == "assistant" and m.tool_calls %}<|im_start|>assistant
<think></think>{% for tc in m.tool_calls %}<tool_call>
<function={{ tc.function.name }}>
{% for k, v in tc.function.arguments|items %}<parameter={{ k }}>
{{ v | tojson if v is mapping or (v is sequence and v is not string) else v | string }}
</parameter>
{% endfor %}</function>
</tool_call>
{% endfor %}<|im_end|>
{% else %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n<think>\n' if enable_thinking else '<|im_start|>assistant\n<think></think>' }}{% endif %}`

// TestNemotron3Format: a Nemotron-3 template's calls are Qwen3-Coder's XML
// (grpo reads them with ToolCallsQwenXML, vLLM with qwen3_coder), its
// reasoning switch is enable_thinking, and a completion (its thinking
// closed by </think>, a call quoted inside the thinking, then the real
// call) reads back as the call rendered, typed by the schema.
func TestNemotron3Format(t *testing.T) {
	if f := TemplateToolCallFormat(nemotron3Like); f != ToolCallsQwenXML {
		t.Fatalf("format %v, want %v", f, ToolCallsQwenXML)
	}
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "tags": {"type": "array"}}}}}`)}
	user := []chat.Message{{Role: "user", Content: "2+3?"}}
	off := false
	for _, c := range []struct {
		thinking *bool
		want     string
	}{{nil, "<|im_start|>assistant\n<think>\n"}, {&off, "<|im_start|>assistant\n<think></think>"}} {
		got, err := RenderChatTemplate(nemotron3Like, user, ChatOptions{AddGenerationPrompt: true, EnableThinking: c.thinking, Tools: tools}, nil)
		if err != nil || len(got) < len(c.want) || got[len(got)-len(c.want):] != c.want {
			t.Errorf("enable_thinking %v: %q, %v; want it to end in %q", c.thinking, got, err, c.want)
		}
	}
	args := json.RawMessage(`{"a": 2, "tags": ["x", "y"]}`)
	call := chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{Type: "function"}}}
	call.ToolCalls[0].Function.Name, call.ToolCalls[0].Function.Arguments = "add", args
	rendered, err := RenderChatTemplate(nemotron3Like, []chat.Message{call}, ChatOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := rendered[len("<|im_start|>assistant\n<think></think>") : len(rendered)-len("<|im_end|>")]
	completion := "I could write <tool_call>\n<function=add>\n</function>\n</tool_call> but first think.</think>\n" + body
	got := ToolCallsQwenXML.ParseWithTools(completion, tools)
	want := ParsedTurn{Content: "I could write <tool_call>\n<function=add>\n</function>\n</tool_call> but first think.</think>", Calls: []ParsedToolCall{{Name: "add", Arguments: args}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q:\n got %+v\nwant %+v", completion, got, want)
	}
}
