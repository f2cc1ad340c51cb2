// node_agents: a tool round trip and a thinking request through the official `ollama` npm
// package against `anvil serve` whose replies are replayed (ANVIL_TEST_REPLAY), run from the
// folder where tests/server/node/package.json was `npm ci`-ed. Prints one JSON object with
// what the client saw (the raw message objects included); tests/server/agents.py checks it.
//   node node_agents.mjs BASE_URL MODEL TOOL_JSON THINK
// THINK: the request's think value as JSON (true, "high", ...).
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(process.cwd(), 'package.json'));
const { Ollama } = await import(require.resolve('ollama'));

const [base, model, toolText, thinkText] = process.argv.slice(2);
const tool = JSON.parse(toolText);
const think = JSON.parse(thinkText);
const client = new Ollama({ host: base });
const out = {};
const messages = [{ role: 'user', content: 'Weather in Paris?' }];

const r = await client.chat({ model, messages, tools: [tool], think });
out.message = r.message;
out.done = r.done;
out.done_reason = r.done_reason;
out.prompt_eval_count = r.prompt_eval_count;

let thinking = '', content = '', n = 0;
const calls = [];
for await (const part of await client.chat({ model, messages, tools: [tool], think, stream: true })) {
  n++;
  thinking += part.message.thinking || '';
  content += part.message.content || '';
  for (const c of part.message.tool_calls || []) calls.push(c);
  out.stream_done = part.done;
}
out.stream = { thinking, content, calls, chunks: n };

// the round trip: the call and its result go back as Ollama's docs show them
const back = messages.concat([
  { role: 'assistant', content: '', thinking: r.message.thinking, tool_calls: r.message.tool_calls },
  { role: 'tool', content: '18C and sunny', tool_name: 'get_weather' },
]);
const r2 = await client.chat({ model, messages: back, tools: [tool], think });
out.round_trip = { done: r2.done, prompt_eval_count: r2.prompt_eval_count, tool_calls: r2.message.tool_calls || [] };

const g = await client.generate({ model, prompt: 'hi', think });
out.generate = { thinking: g.thinking, response: g.response, done: g.done };
console.log(JSON.stringify(out));
