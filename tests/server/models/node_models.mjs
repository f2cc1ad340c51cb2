// node_models: the model-management API of `anvil serve` through the official `ollama`
// npm package (run from a folder where tests/server/node/package.json was `npm ci`-ed).
// Prints one JSON object with what it saw; tests/server/models/node_client.py checks it.
//   node node_models.mjs BASE_URL GGUF_PATH
import { createRequire } from 'node:module';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const require = createRequire(path.join(process.cwd(), 'package.json'));
const { Ollama } = await import(require.resolve('ollama'));

const [base, ggufPath] = process.argv.slice(2);
const client = new Ollama({ host: base });
const out = {};
const bytes = readFileSync(ggufPath);
const digest = 'sha256:' + createHash('sha256').update(bytes).digest('hex');
out.digest = digest;

out.version = (await client.version()).version;
const up = await fetch(`${base}/api/blobs/${digest}`, { method: 'POST', body: bytes });
out.blob_status = up.status;

out.create_statuses = [];
for await (const p of await client.create({ model: 'js/tiny:1', files: { 'tiny.gguf': digest }, system: 'JS system',
                                            parameters: { temperature: 0.3, stop: ['<x>'] }, stream: true }))
  out.create_statuses.push(p.status);
out.list = (await client.list()).models.map((m) => ({ name: m.name, digest: m.digest, details: m.details }));
const s = await client.show({ model: 'js/tiny:1' });
out.show = { system: s.system, parameters: s.parameters, details: s.details,
             arch: s.model_info['general.architecture'], capabilities: s.capabilities };
const g = await client.generate({ model: 'js/tiny:1', prompt: 'hi', raw: true, options: { num_predict: 2 } });
out.generate_done = g.done;
out.ps = (await client.ps()).models.map((m) => ({ name: m.name, size: m.size, size_vram: m.size_vram,
                                                  expires_at: m.expires_at, context_length: m.context_length }));
await client.copy({ source: 'js/tiny:1', destination: 'js/tiny:2' });
out.after_copy = (await client.list()).models.map((m) => m.name).sort();
await client.delete({ model: 'js/tiny:2' });
out.after_delete = (await client.list()).models.map((m) => m.name).sort();
try {
  await client.delete({ model: 'js/tiny:2' });
  out.delete_missing = 'no error';
} catch (e) {
  out.delete_missing = String(e.message || e);
}
try {
  await client.show({ model: 'js/none:1' });
  out.show_missing = 'no error';
} catch (e) {
  out.show_missing = String(e.message || e);
}
console.log(JSON.stringify(out));
