// node_client: drives `anvil serve` with the official `ollama` npm package (run from the
// folder where tests/server/node/package.json was `npm ci`-ed). Prints one JSON object
// with what it saw; tests/server/clients.py checks it.
//   node node_client.mjs BASE_URL MODEL SCHEMA_JSON
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(process.cwd(), 'package.json'));
const { Ollama } = await import(require.resolve('ollama'));

const [base, model, schemaText] = process.argv.slice(2);
const schema = JSON.parse(schemaText);
const client = new Ollama({ host: base });
const greedy = { temperature: 0, num_predict: 8, seed: 1 };
const out = {};

const g = await client.generate({ model, prompt: 'Once upon a time', options: greedy });
out.generate_done = g.done;
out.generate_eval_count = g.eval_count;
out.generate_text = g.response;
let text = '';
for await (const part of await client.generate({ model, prompt: 'Once upon a time', options: greedy, stream: true }))
  text += part.response;
out.generate_stream_text = text;

const messages = [{ role: 'user', content: 'Hello there' }];
const c = await client.chat({ model, messages, options: greedy });
out.chat_text = c.message.content;
text = '';
let done = false;
for await (const part of await client.chat({ model, messages, options: greedy, stream: true })) {
  text += part.message.content;
  done = part.done;
}
out.chat_stream_text = text;
out.chat_stream_done = done;

const e = await client.embed({ model, input: ['first text', 'a second, longer text'] });
out.embed_n = e.embeddings.length;
out.embed_dim = e.embeddings[0].length;

const s = await client.chat({ model, messages: [{ role: 'user', content: 'JSON please' }], format: schema,
                              options: { temperature: 0, num_predict: 256, seed: 3 } });
out.schema_text = s.message.content;
console.log(JSON.stringify(out));
