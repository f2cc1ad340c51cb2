// make_golden: runs llama.cpp (through node-llama-cpp, CPU build) on a GGUF vocabulary and
// writes tests/data/tokenizer-golden-<name>.json: for a few hundred test strings the token ids
// llama.cpp produces with parse_special off and on (add_special off, as node-llama-cpp's
// tokenize() calls common_tokenize(vocab, text, false, special)), whether llama.cpp's
// detokenize gives the string back, the special token ids, the EOG set and sample pieces.
//
// usage: NODE_PATH=/tmp/llamacpp-oracle/node_modules node tests/tokenizer/make_golden.mjs \
//          --model m.gguf --name gemma3 --out tests/data/tokenizer-golden-gemma3.json
import fs from "node:fs";
import path from "node:path";
import {createRequire} from "node:module";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1]]);
    return acc;
}, []));
if (!args.model || !args.name || !args.out) {
    console.error("usage: make_golden.mjs --model m.gguf --name NAME --out golden.json [--oracle /tmp/llamacpp-oracle]");
    process.exit(2);
}
const oracle = args.oracle || process.env.LLAMACPP_ORACLE || "/tmp/llamacpp-oracle";
const require = createRequire(path.join(oracle, "package.json"));
const {getLlama, LlamaLogLevel} = await import(require.resolve("node-llama-cpp"));

// ---- the test strings (deterministic) ----
const S = [];
const add = (...xs) => { for (const x of xs) if (!S.includes(x)) S.push(x); };
add("Hello world", "Hello, world!", "hello", "HELLO", " Hello", "Hello ", "  Hello  ", "The quick brown fox jumps over the lazy dog.");
add("I'm", "don't", "we'll", "they're", "I've", "he'd", "it's", "John's book", "I'M DON'T WE'LL THEY'RE I'VE HE'D IT'S",
    "'s", "'ll", "'t", "'re", "'ve", "'m", "'d", "'S", "'LL", "'x", "''", "'", "rock 'n' roll", "can't won't shan't", "y'all'd've");
add("", " ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r", " \n ", "\n \n", " \t\n",
    "a  b", "a   b", "a    b", "a\tb", "a\t\tb", "a \tb", "a\t b", "a\nb", "a\n\nb", "a\r\nb", "a \n b", "a  \n  b",
    " leading", "  two leading", "trailing ", "trailing  ", "  both  ", "\n\n\nx", "x\n\n\n", "x \n", "line1\nline2\r\nline3\n",
    "a\u00a0b", "\u00a0nbsp", "a\u3000b", "x\u2028y", "x\u2029y", "a\u180eb", "a\u200bb", "a\u0085b", "\ufeffbom", "a\u000bb\u000cc",
    " ".repeat(40), "\t".repeat(40), "\n".repeat(40), " \t".repeat(10), "x" + " ".repeat(33) + "y", "x" + "\t".repeat(33) + "y");
add("1", "12", "123", "1234", "12345", "123456", "1234567", "1234567890", "3.14159", "1,000,000", "2024-01-15", "0x1F",
    "007", "-42", "+7", "1e-10", "10^6", "1/2", "½ ¼ ¾", "Ⅻ ⅷ", "١٢٣٤٥", "०१२३४५", "１２３", "²³", "①②③",
    "12345678901234567890123456789012345678901234567890", "9".repeat(31), "a1b22c333d4444", "v1.2.3", "3am", "100km", "x2", "2x");
add("Привет, мир!", "Съешь же ещё этих мягких французских булок", "Καλημέρα κόσμε", "你好，世界！", "我爱自然语言处理。",
    "日本語のテキストです。", "ひらがな カタカナ 漢字", "안녕하세요 세계", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया",
    "हिन्दी में लिखा गया वाक्य", "สวัสดีชาวโลก", "বাংলা ভাষা", "தமிழ் மொழி", "Xin chào thế giới", "Tiếng Việt có dấu",
    "Grüße aus München", "Straße", "français: à é è ê ë ï î ô ù û ü ÿ ç œ æ", "İstanbul ıi", "Ǆǅǆ ǈ", "ﬁ ﬂ",
    "e\u0301", "cafe\u0301", "n\u0303", "\u0301", "a\u0300\u0301\u0302", "Ελληνικά αβγ", "ᏣᎳᎩ", "ქართული", "Հայերեն",
    "ꯃꯤꯇꯩ", "ᠮᠣᠩᠭᠣᠯ", "ܣܘܪܝܝܐ", "ދިވެހި", "ትግርኛ", "ᐃᓄᒃᑎᑐᑦ", "𐐷𐑉", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝕳𝖊𝖑𝖑𝖔", "𠀀𠀁", "𪜀",
    "\u{1E030}\u{1E031}", "a\u{1E030}b", "x\u{11F50}\u{11F51}", "\u{1D2C0}9", "\u{31350}\u{31351}", "\ue000\ue001", "\u{F0000}");
add("😀", "😀😃😄", "👍🏽", "👨‍👩‍👧‍👦", "🇺🇸🇫🇷", "🤖🚀✨", "I ❤️ NY", "😀 smile", "smile😀", "🙂🙃", "☃", "⚡", "✅❌",
    "🏳️‍🌈", "🧑🏿‍💻", "🫠", "👋 hi 👋", "🔥🔥🔥🔥🔥");
add("...", "?!?!", "!!!", "—", "a—b", "a–b", "“quoted”", "‘single’", "«guillemets»", "„Anführung“", "¿Qué?", "¡Hola!",
    "(a+b)*c", "[1, 2, 3]", "{key: value}", "<>", "</>", "a->b", "x=>y", "!=", "==", "===", "&&", "||", "::", "#!", "@@",
    "$100", "50%", "€20", "£5", "¥1000", "#hashtag", "@mention", "~tilde", "back\\slash", "pipe|pipe", "caret^", "`code`",
    "https://example.com/path?q=1&b=2#frag", "user@example.com", "C:\\Program Files\\x.exe", "/usr/local/bin", "a.b.c",
    "e.g. i.e. etc.", "Mr. Smith", "U.S.A.", "end.", "end .", "end ,", "hi !", "why ?", " ' ", "a ' b", "it 's", "we 're");
add("def foo(x):\n    return x ** 2\n", "int main(void) {\n\treturn 0;\n}\n", "#include <stdio.h>\n", "for (int i = 0; i < n; i++) {",
    "if x == 1 and y != 2:\n        pass", "const f = (a, b) => a + b;", "SELECT * FROM users WHERE id = 42;",
    "```python\nprint('hi')\n```", "{\"name\": \"anvil\", \"version\": 1, \"ok\": true}", "<div class=\"x\">text</div>",
    "**bold** _italic_ `code`", "# Title\n\n- item 1\n- item 2\n", "| a | b |\n|---|---|\n| 1 | 2 |", "x = [i*i for i in range(10)]",
    "fn main() -> Result<(), Box<dyn Error>> {", "    indented four", "\tindented tab", "  \t mixed", "a_b_c", "camelCaseName",
    "snake_case_name", "SCREAMING_CASE", "kebab-case-name", "__init__", "0xDEADBEEF", "ptr->next->prev", "std::vector<int>");
add("<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n", "<start_of_turn>user\n", "<end_of_turn>", "<bos>", "<eos>",
    "<pad>", "<unk>", "<mask>", "<unused0>", "<unused99>", "<start_of_image>", "<end_of_image>", "[multimodal]",
    "<table><tr><td>x</td></tr></table>", "<b>bold</b> and <i>it</i>", "text<end_of_turn>text", "<<start_of_turn>>",
    "<start_of_turn", "start_of_turn>", "<bos><bos>", " <bos> ", "<eos>\n<bos>", "<h1>Title</h1>", "<code>x</code>",
    "<s>", "</s>", "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n", "<|endoftext|>", "<|im_start|><|im_end|>",
    "x<|eot_id|>y", "<|im_end|>\n", "<|im_start|>assistant\n", "<|endoftext|><|endoftext|>", "<|", "|>", "<|eot_id", "<|fim_prefix|>",
    "<think>\nreasoning</think>answer", "a<think>b", "<think><think>", "</think>", " <think> ");
add("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. " +
    "Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.",
    "a".repeat(100), "ab".repeat(50), "abc ".repeat(25), "=".repeat(64), "-".repeat(80), "_".repeat(33), "...".repeat(20),
    "The year 1984 had 365 days; 2024 has 366. Pi ≈ 3.14159265358979.", "Ünïcödé ñ ß ø å æ œ ł ž č ř ů",
    "混合 mixed テキスト with 한국어 and English 123.", "Email me at a.b@c.de or call +1 (555) 123-4567!");

// Where PCRE2 and llama.cpp's Unicode tables disagree (U+180E is not whitespace for llama.cpp;
// letters and digits added in Unicode 15): splits that change which merges apply.
add("a  \u180eb", "x  \u180e  y", "\u180e  \u180e", "1\u{1D2C0}23", "12\u{11F50}3456", "9\u{1E4F0}99 12", "ab  \u{1E030}cd  \u{11F04}x");

// Generated combinations: pieces glued with separators, from a fixed-seed generator.
const pool = ["hello", "World", " ", "  ", "\n", "\t", "123", "4567", "'s", "'ll", "don't", "😀", "你好", "Привет", "مرحبا",
    ".", ",", "!", "?", "(", ")", "{", "}", "<", ">", "\"", "'", "-", "_", "/", "\\", "#", "é", "e\u0301", "ß", "\u00a0",
    "\r\n", "x", "Y", "z9", "🇺🇸", "ﬁ", "\u3000", "<end_of_turn>", "<|im_end|>", "<b>", "  \n", "0", "99999", "ǅ"];
let seed = 12345;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
for (let i = 0; i < 130; i++) {
    let s = "";
    const k = 2 + rnd(7);
    for (let j = 0; j < k; j++) s += pool[rnd(pool.length)];
    add(s);
}

// ---- run llama.cpp ----
const llama = await getLlama({gpu: false, build: "never", usePrebuiltBinaries: true, logLevel: LlamaLogLevel.error, progressLogs: false});
const model = await llama.loadModel({modelPath: args.model, vocabOnly: true});
const nVocab = model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length;
const cases = [];
const used = new Set();
for (const text of S) {
    const plain = model.tokenize(text, false);
    const special = model.tokenize(text, true);
    const c = {text, plain};
    if (JSON.stringify(special) !== JSON.stringify(plain)) c.special = special;
    c.roundtrip = model.detokenize(plain, false) === text;
    cases.push(c);
    for (const id of plain.concat(special)) used.add(id);
}
for (let id = 0; id < Math.min(nVocab, 400); id++) used.add(id);
for (let i = 0; i < 600; i++) used.add(rnd(nVocab));
const eog = [];
for (let id = 0; id < nVocab; id++) if (model.isEogToken(id)) eog.push(id);
// Pieces: token_to_piece(special off / on). Left out where the string node-llama-cpp returns
// cannot carry the bytes (invalid UTF-8 became U+FFFD; byte 0 is lost) or where llama.cpp's
// detokenize cleans spaces (" .", " '") so the result is not the piece itself.
const vocabTexts = model.fileInfo.metadata?.tokenizer?.ggml?.tokens ?? [];
const pieces = [];
for (const id of [...used].sort((a, b) => a - b)) {
    const raw = String(vocabTexts[id] ?? "").replace(/[\u0120\u2581]/g, " ");
    if (raw === "<0x00>" || raw === "\u0100" || / [.,!?']/.test(raw)) continue;
    const p0 = model.detokenize([id], false), p1 = model.detokenize([id], true);
    if (/\uFFFD/.test(p0 + p1) || / [.,!?']/.test(p0 + p1)) continue;
    pieces.push([id, p0, p1]);
}
const out = {
    format: "tokenizer-golden-v1",
    generator: "tests/tokenizer/make_golden.mjs (node-llama-cpp " + JSON.parse(fs.readFileSync(path.join(oracle, "node_modules/node-llama-cpp/package.json"), "utf8")).version + ")",
    model: path.basename(args.model),
    n_vocab: nVocab,
    bos: model.tokens.bos, eos: model.tokens.eos, eot: model.tokens.eot,
    add_bos: model.tokens.shouldPrependBosToken,
    eog, cases, pieces,
};
fs.writeFileSync(args.out, JSON.stringify(out) + "\n");
console.log(`${args.out}: ${cases.length} strings, ${pieces.length} pieces, ${eog.length} EOG ids`);
await model.dispose();
await llama.dispose();
