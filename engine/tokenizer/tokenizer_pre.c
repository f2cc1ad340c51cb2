/* tokenizer_pre: the table of tokenizer.ggml.pre names llama.cpp accepts for byte-level BPE
 * vocabularies (src/llama-vocab.cpp), each with its pre-tokenizer family and the flags
 * llama.cpp sets for it, and per family the list of split regexes (as llama.cpp runs them, in
 * order; tokenizer_split.c gives them llama.cpp's meaning) and whether words are mapped to the
 * GPT-2 byte alphabet. Data only: no behaviour lives here. */
#include <string.h>

#include "tokenizer_impl.h"

/* Pieces shared by many regexes. */
#define CONTR "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define WS_END "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RE_LLAMA3 CONTR "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" WS_END
#define RE_QWEN2 CONTR "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" WS_END
#define RE_NEWLINES "[^\\n]+|[\\n]+"
#define RE_BLOOM " ?[^(\\s|.,!?…。，、।۔،)]+"
#define RE_CJK_KANA "[一-龥぀-ゟ゠-ヿ]+"
#define RE_CJK_HANGUL "[一-龥ࠀ-一가-퟿]+"
/* [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+ as llama.cpp rewrites it */
#define UPPER_THEN_LOWER(L) "((?=[" L "])([^a-z]))*((?=[" L "])([^A-Z]))+"
#define UPPER_RUN_LOWER(L) "((?=[" L "])([^a-z]))+((?=[" L "])([^A-Z]))*"
#define RE_GPT4O_LIKE(L)                                                                                     \
    "[^\\r\\n\\p{L}\\p{N}]?" UPPER_THEN_LOWER(L) CONTR "?|[^\\r\\n\\p{L}\\p{N}]?" UPPER_RUN_LOWER(L) CONTR \
    "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|" WS_END
#define RE_CASED_WORDS                                                                                          \
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" CONTR                  \
    "?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" CONTR "?"
#define RE_ASCII_PUNCT_WORD "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+"

/* Families: one regex list each (llm_tokenizer_bpe's constructor). */
static const tok_pre_family k_family[TOK_PRE_COUNT] = {
    [TOK_PRE_DEFAULT] = {{"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}, true},
    [TOK_PRE_LLAMA3] = {{RE_LLAMA3}, true},
    [TOK_PRE_JAIS2] = {{CONTR "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                        "\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|"
                        "\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}"},
                       true},
    [TOK_PRE_DEEPSEEK_LLM] = {{"[\r\n]",
                               "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
                               "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", RE_CJK_HANGUL, "\\p{N}+"},
                              true},
    [TOK_PRE_DEEPSEEK3] = {{"\\p{N}{1,3}", RE_CJK_KANA,
                            RE_ASCII_PUNCT_WORD "|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"},
                           true},
    [TOK_PRE_SPARK2_5] = {{"\\p{N}{1,3}", RE_CJK_KANA,
                           RE_ASCII_PUNCT_WORD "|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
                           "\\p{N}"},
                          true},
    [TOK_PRE_YOUTU] = {{"[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
                        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" CONTR
                        "?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" CONTR
                        "?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|" WS_END},
                       true},
    [TOK_PRE_DEEPSEEK_CODER] = {{"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RE_CJK_HANGUL, "\\p{N}"}, true},
    [TOK_PRE_FALCON] = {{"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]"}, true},
    [TOK_PRE_STARCODER] = {{"\\p{N}", RE_GPT2}, true},
    [TOK_PRE_GPT2] = {{RE_GPT2}, true},
    [TOK_PRE_QWEN2] = {{RE_QWEN2}, true},
    [TOK_PRE_QWEN35] = {{CONTR "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|" WS_END},
                        true},
    [TOK_PRE_BLOOM] = {{RE_BLOOM}, true},
    [TOK_PRE_VIKING] = {{RE_BLOOM, "\\p{N}"}, true},
    [TOK_PRE_TEKKEN] = {{"[^\\r\\n\\p{L}\\p{N}]?" UPPER_THEN_LOWER("\\p{L}") "|[^\\r\\n\\p{L}\\p{N}]?" UPPER_RUN_LOWER("\\p{L}")
                         "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|" WS_END},
                        true},
    [TOK_PRE_CHAMELEON] = {{"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
                            "[\\p{P}!-/:-@\\[-`{-~]", RE_GPT2},
                           true},
    [TOK_PRE_GPT4O] = {{RE_GPT4O_LIKE("\\p{L}")}, true},
    [TOK_PRE_GRANITE_EMB_MULTI] = {{RE_GPT4O_LIKE("\\p{L}\\p{M}")}, true},
    [TOK_PRE_TINY_AYA] = {{"\\d{1,3}(?=(?:\\d{3})*\\b)", RE_CASED_WORDS "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|" WS_END},
                          true},
    [TOK_PRE_KIMI_K2] = {{"\\p{Han}+"}, true},
    [TOK_PRE_SUPERBPE] = {{"\\p{N}+", "(?=(\\d{3})+(?!\\d))"}, true},
    [TOK_PRE_BAILINGMOE] = {{"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                             "\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"},
                            true},
    [TOK_PRE_SEED_CODER] = {{CONTR "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|" WS_END}, true},
    [TOK_PRE_UFAKZEKA] = {{"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" WS_END}, true},
    [TOK_PRE_AFMOE] = {{"\\p{AFMoE_digits}", "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+",
                        RE_ASCII_PUNCT_WORD "|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|" WS_END},
                       true},
    [TOK_PRE_LAGUNA] = {{RE_NEWLINES, RE_QWEN2}, true},
    [TOK_PRE_EXAONE_MOE] = {{CONTR "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|"
                            "\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"},
                           true},
    [TOK_PRE_GEMMA4] = {{RE_NEWLINES}, false},
    [TOK_PRE_SARVAM] = {{RE_NEWLINES}, false},
    [TOK_PRE_MMBERT] = {{RE_NEWLINES}, false},
    [TOK_PRE_MINICPM5] = {{"\\p{N}{1,3}", CONTR "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" WS_END},
                          true},
    [TOK_PRE_WHITESPACE] = {{"\\S+"}, false},
};

enum {
    KEEP = 0,
    NO_CLEAN = TOK_PREF_NO_CLEAN_SPACES,
    IGN = TOK_PREF_IGNORE_MERGES,
    BOS = TOK_PREF_ADD_BOS,
    ESC = TOK_PREF_ESCAPE_WHITESPACE,
    NO_BOS_ID = TOK_PREF_NO_BOS_ID,
    SEP = TOK_PREF_ADD_SEP,
    FORCE_BOS = TOK_PREF_FORCE_BOS,
};

/* Every name llama.cpp's llama_vocab::impl::load accepts for tokenizer.model "gpt2", in its
 * order, with the family and flags it sets. */
static const tok_pre_name k_names[] = {
    {"default", TOK_PRE_DEFAULT, KEEP},
    {"minicpm5", TOK_PRE_MINICPM5, IGN},
    {"llama3", TOK_PRE_LLAMA3, IGN | BOS},
    {"llama-v3", TOK_PRE_LLAMA3, IGN | BOS},
    {"llama-bpe", TOK_PRE_LLAMA3, IGN | BOS},
    {"falcon3", TOK_PRE_LLAMA3, IGN | BOS},
    {"falcon-h1", TOK_PRE_LLAMA3, IGN | BOS},
    {"pixtral", TOK_PRE_LLAMA3, IGN | BOS},
    {"midm-2.0", TOK_PRE_LLAMA3, IGN | BOS},
    {"lfm2", TOK_PRE_LLAMA3, IGN | BOS},
    {"jina-v5-nano", TOK_PRE_LLAMA3, IGN | BOS},
    {"deepseek-llm", TOK_PRE_DEEPSEEK_LLM, NO_CLEAN},
    {"deepseek-coder", TOK_PRE_DEEPSEEK_CODER, NO_CLEAN},
    {"deepseek-v3", TOK_PRE_DEEPSEEK3, NO_CLEAN},
    {"spark2_5", TOK_PRE_SPARK2_5, NO_CLEAN},
    {"youtu", TOK_PRE_YOUTU, NO_CLEAN | IGN},
    {"falcon", TOK_PRE_FALCON, KEEP},
    {"mpt", TOK_PRE_GPT2, KEEP},
    {"starcoder", TOK_PRE_STARCODER, KEEP},
    {"gpt-2", TOK_PRE_GPT2, KEEP},
    {"phi-2", TOK_PRE_GPT2, KEEP},
    {"jina-es", TOK_PRE_GPT2, KEEP},
    {"jina-de", TOK_PRE_GPT2, KEEP},
    {"gigachat", TOK_PRE_GPT2, KEEP},
    {"jina-v2-es", TOK_PRE_GPT2, KEEP},
    {"jina-v2-de", TOK_PRE_GPT2, KEEP},
    {"a.x-4.0", TOK_PRE_GPT2, KEEP},
    {"mellum", TOK_PRE_GPT2, KEEP},
    {"modern-bert", TOK_PRE_GPT2, KEEP},
    {"jais-2", TOK_PRE_JAIS2, KEEP},
    {"gemma4", TOK_PRE_GEMMA4, ESC | FORCE_BOS},
    {"granite-embed-multi-311m", TOK_PRE_GEMMA4, ESC | FORCE_BOS},
    {"mmbert", TOK_PRE_MMBERT, ESC},
    {"sarvam-moe", TOK_PRE_SARVAM, ESC | NO_CLEAN},
    {"jina-v1-en", TOK_PRE_GPT2, SEP},
    {"jina-v2-code", TOK_PRE_GPT2, SEP},
    {"roberta-bpe", TOK_PRE_GPT2, SEP},
    {"whitespace", TOK_PRE_WHITESPACE, KEEP},
    {"refact", TOK_PRE_STARCODER, KEEP},
    {"command-r", TOK_PRE_STARCODER, NO_CLEAN},
    {"qwen2", TOK_PRE_QWEN2, NO_CLEAN},
    {"deepseek-r1-qwen", TOK_PRE_QWEN2, NO_CLEAN},
    {"kormo", TOK_PRE_QWEN2, NO_CLEAN},
    {"f2llmv2", TOK_PRE_QWEN2, NO_CLEAN},
    {"qwen35", TOK_PRE_QWEN35, NO_CLEAN},
    {"stablelm2", TOK_PRE_QWEN2, KEEP},
    {"olmo", TOK_PRE_GPT2, KEEP},
    {"dbrx", TOK_PRE_LLAMA3, KEEP},
    {"smaug-bpe", TOK_PRE_LLAMA3, KEEP},
    {"poro-chat", TOK_PRE_BLOOM, NO_CLEAN},
    {"chatglm-bpe", TOK_PRE_LLAMA3, NO_BOS_ID},
    {"glm4", TOK_PRE_LLAMA3, NO_BOS_ID | IGN},
    {"glm5", TOK_PRE_LLAMA3, NO_BOS_ID | IGN},
    {"viking", TOK_PRE_VIKING, NO_CLEAN},
    {"jais", TOK_PRE_GPT2, KEEP},
    {"tekken", TOK_PRE_TEKKEN, NO_CLEAN | IGN | BOS},
    {"smollm", TOK_PRE_STARCODER, NO_CLEAN},
    {"codeshell", TOK_PRE_STARCODER, KEEP},
    {"bloom", TOK_PRE_BLOOM, KEEP},
    {"gpt3-finnish", TOK_PRE_BLOOM, KEEP},
    {"exaone", TOK_PRE_STARCODER, KEEP},
    {"exaone4", TOK_PRE_GPT2, KEEP},
    {"exaone-moe", TOK_PRE_EXAONE_MOE, KEEP},
    {"chameleon", TOK_PRE_CHAMELEON, BOS | NO_CLEAN},
    {"minerva-7b", TOK_PRE_STARCODER, KEEP},
    {"megrez", TOK_PRE_QWEN2, KEEP},
    {"gpt-4o", TOK_PRE_GPT4O, NO_CLEAN},
    {"llama4", TOK_PRE_GPT4O, NO_CLEAN},
    {"kanana2", TOK_PRE_GPT4O, NO_CLEAN},
    {"talkie", TOK_PRE_GPT4O, NO_CLEAN},
    {"granite-embed-multi-97m", TOK_PRE_GRANITE_EMB_MULTI, NO_CLEAN | IGN},
    {"tiny_aya", TOK_PRE_TINY_AYA, NO_CLEAN},
    {"cohere2moe", TOK_PRE_TINY_AYA, NO_CLEAN},
    {"superbpe", TOK_PRE_SUPERBPE, NO_CLEAN},
    {"trillion", TOK_PRE_GPT2, NO_CLEAN},
    {"granite-docling", TOK_PRE_GPT2, NO_CLEAN},
    {"bailingmoe", TOK_PRE_BAILINGMOE, NO_CLEAN},
    {"bailingmoe2", TOK_PRE_BAILINGMOE, NO_CLEAN},
    {"llada-moe", TOK_PRE_BAILINGMOE, NO_CLEAN},
    {"seed-coder", TOK_PRE_SEED_CODER, NO_CLEAN},
    {"hunyuan", TOK_PRE_QWEN2, NO_CLEAN},
    {"hunyuan-dense", TOK_PRE_DEEPSEEK3, NO_CLEAN},
    {"hy_v4", TOK_PRE_DEEPSEEK3, NO_CLEAN},
    {"joyai-llm", TOK_PRE_DEEPSEEK3, NO_CLEAN},
    {"kimi-k2", TOK_PRE_KIMI_K2, NO_CLEAN},
    {"ufakzeka", TOK_PRE_UFAKZEKA, NO_CLEAN},
    {"grok-2", TOK_PRE_QWEN2, NO_CLEAN},
    {"afmoe", TOK_PRE_AFMOE, NO_CLEAN},
    {"laguna", TOK_PRE_LAGUNA, NO_CLEAN},
    {"minimax-m2", TOK_PRE_GPT4O, NO_CLEAN},
    {"solar-open", TOK_PRE_QWEN2, NO_CLEAN},
    {"mellum2", TOK_PRE_STARCODER, KEEP},
    /* Anvil's own alias, kept for GGUFs written by early tools; llama.cpp only knows "gpt-2". */
    {"gpt2", TOK_PRE_GPT2, KEEP},
};

const tok_pre_name *tok_pre_find(const char *name) {
    for (size_t i = 0; i < sizeof(k_names) / sizeof(k_names[0]); i++)
        if (strcmp(k_names[i].name, name) == 0) return &k_names[i];
    return NULL;
}

const tok_pre_name *tok_pre_names(size_t *n) {
    *n = sizeof(k_names) / sizeof(k_names[0]);
    return k_names;
}

const tok_pre_family *tok_pre_family_of(tok_pre pre) { return &k_family[pre]; }
