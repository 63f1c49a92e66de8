/* pretokenize.c: see pretokenize.h. The regexes are those of the models'
 * tokenizer.json files as llama.cpp adapts them (case-insensitive groups
 * spelled out), with a few escapes rewritten to mean what they mean there. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenize.h"
#include <pcre2.h>
#include <string.h>
#include "tokenizer/pretok_custom.h"
#include "tokenizer/unicode.h"
#include "util/util.h"

/* ---- the regex sets */
#define CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define GPT2_RE "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define LLAMA3_RE CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define QWEN2_RE CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define CASED_WORDS(LET) \
  "[^\\r\\n\\p{L}\\p{N}]?((?=[" LET "])([^a-z]))*((?=[" LET "])([^A-Z]))+" CONTRACTIONS_OPT \
  "|[^\\r\\n\\p{L}\\p{N}]?((?=[" LET "])([^a-z]))+((?=[" LET "])([^A-Z]))*" CONTRACTIONS_OPT
#define DEEPSEEK3_MAIN "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
#define UPPER_LOWER \
  "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?" \
  "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"

typedef enum {
  RS_DEFAULT, RS_LLAMA3, RS_JAIS2, RS_DEEPSEEK_LLM, RS_DEEPSEEK3, RS_SPARK, RS_YOUTU, RS_DEEPSEEK_CODER, RS_FALCON,
  RS_STARCODER, RS_GPT2, RS_QWEN2, RS_QWEN35, RS_PORO, RS_VIKING, RS_TEKKEN, RS_CHAMELEON, RS_GPT4O,
  RS_GRANITE_EMB, RS_TINY_AYA, RS_SUPERBPE, RS_BAILINGMOE, RS_SEED_CODER, RS_UFAKZEKA, RS_LAGUNA, RS_EXAONE_MOE,
  RS_MINICPM5, RS_LINES, RS_KIMI_K2, RS_AFMOE, RS_WHITESPACE, RS_COUNT
} regex_set;

/* The regexes llama.cpp never compiles: it recognizes these exact strings
 * and runs its own code (pretok_custom.c). */
#define KIMI_K2_RE "\\p{Han}+"
#define AFMOE_DIGITS_RE "\\p{AFMoE_digits}"
#define TINY_AYA_DIGITS_RE "\\d{1,3}(?=(?:\\d{3})*\\b)"
static const struct { const char *re; pretok_custom kind; } CUSTOM_STEPS[] = {
  { KIMI_K2_RE, PRETOK_KIMI_K2 }, { AFMOE_DIGITS_RE, PRETOK_DIGIT_GROUPS }, { TINY_AYA_DIGITS_RE, PRETOK_DIGIT_GROUPS },
};

#define MAX_RE 6
static const char *const REGEX_SETS[RS_COUNT][MAX_RE] = {
  [RS_DEFAULT] = { "[\\p{P}\\$\\+<=>\\^~\\|]+", GPT2_RE, "\\p{N}+", "[0-9][0-9][0-9]" },
  [RS_LLAMA3] = { LLAMA3_RE },
  [RS_JAIS2] = { CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+"
                 "|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)"
                 "|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}" },
  [RS_DEEPSEEK_LLM] = {
    "[\r\n]",
    "\\s?[A-Za-z"
    "\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}\\x{295}-"
    "\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}"
    "\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-"
    "\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-"
    "\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-"
    "\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}"
    "\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-"
    "\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}"
    "\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-"
    "\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}"
    "\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-"
    "\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-"
    "\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-"
    "\\x{1044F}\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}"
    "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+",
    "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
    "\\s+$",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}+" },
  [RS_DEEPSEEK3] = { "\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+",
                     DEEPSEEK3_MAIN "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+" },
  [RS_SPARK] = { "\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+",
                 DEEPSEEK3_MAIN "| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+", "\\p{N}" },
  [RS_YOUTU] = { "[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
                 "[^\\r\\n\\p{L}\\p{N}]?" UPPER_LOWER "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  [RS_DEEPSEEK_CODER] = { "[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}" },
  [RS_FALCON] = { "[\\p{P}\\$\\+<=>\\^~\\|`]+", GPT2_RE, "[0-9][0-9][0-9]" },
  [RS_STARCODER] = { "\\p{N}", GPT2_RE },
  [RS_GPT2] = { GPT2_RE },
  [RS_QWEN2] = { QWEN2_RE },
  [RS_QWEN35] = { CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  [RS_PORO] = { " ?[^(\\s|.,!?…。，、।۔،)]+" },
  [RS_VIKING] = { " ?[^(\\s|.,!?…。，、।۔،)]+", "\\p{N}" },
#define CONTRACTIONS_OPT ""
  [RS_TEKKEN] = { CASED_WORDS("\\p{L}") "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
#undef CONTRACTIONS_OPT
#define CONTRACTIONS_OPT CONTRACTIONS "?"
  [RS_GPT4O] = { CASED_WORDS("\\p{L}") "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  [RS_GRANITE_EMB] = { CASED_WORDS("\\p{L}\\p{M}") "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
#undef CONTRACTIONS_OPT
  [RS_CHAMELEON] = { "<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
                     "[\\p{P}!-/:-@\\[-`{-~]", GPT2_RE },
  [RS_TINY_AYA] = { TINY_AYA_DIGITS_RE,
                    "[^\\r\\n\\p{L}\\p{N}]?" UPPER_LOWER "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  [RS_SUPERBPE] = { "\\p{N}+", "(?=(\\d{3})+(?!\\d))" },
  [RS_BAILINGMOE] = { "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+" },
  [RS_SEED_CODER] = { CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  [RS_UFAKZEKA] = { "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  [RS_LAGUNA] = { "[^\\n]+|[\\n]+", QWEN2_RE },
  [RS_EXAONE_MOE] = { CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+" },
  [RS_LINES] = { "[^\\n]+|[\\n]+" },
  [RS_KIMI_K2] = { KIMI_K2_RE },
  [RS_AFMOE] = { AFMOE_DIGITS_RE,
                 "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+",
                 DEEPSEEK3_MAIN "| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
  [RS_WHITESPACE] = { "\\S+" },
  [RS_MINICPM5] = { "\\p{N}{1,3}", CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
};

/* ---- tokenizer.ggml.pre names, as llama.cpp maps them */
typedef struct { const char *name; regex_set set; unsigned flags; } pre_name;
#define NC PRE_NO_CLEAN
#define SPM_BPE (PRE_ESCAPE_SPACES | PRE_RAW_UTF8)
static const pre_name PRE_NAMES[] = {
  { "default", RS_DEFAULT, 0 },
  { "llama3", RS_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS }, { "llama-v3", RS_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS },
  { "llama-bpe", RS_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS }, { "falcon3", RS_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS },
  { "falcon-h1", RS_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS }, { "pixtral", RS_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS },
  { "midm-2.0", RS_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS }, { "lfm2", RS_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS },
  { "jina-v5-nano", RS_LLAMA3, PRE_IGNORE_MERGES | PRE_ADD_BOS },
  { "deepseek-llm", RS_DEEPSEEK_LLM, NC }, { "deepseek-coder", RS_DEEPSEEK_CODER, NC },
  { "deepseek-v3", RS_DEEPSEEK3, NC }, { "hunyuan-dense", RS_DEEPSEEK3, NC }, { "hy_v4", RS_DEEPSEEK3, NC },
  { "joyai-llm", RS_DEEPSEEK3, NC }, { "spark2_5", RS_SPARK, NC }, { "youtu", RS_YOUTU, NC | PRE_IGNORE_MERGES },
  { "falcon", RS_FALCON, 0 }, { "mpt", RS_GPT2, 0 }, { "starcoder", RS_STARCODER, 0 },
  { "gpt-2", RS_GPT2, 0 }, { "phi-2", RS_GPT2, 0 }, { "jina-es", RS_GPT2, 0 }, { "jina-de", RS_GPT2, 0 },
  { "gigachat", RS_GPT2, 0 }, { "jina-v2-es", RS_GPT2, 0 }, { "jina-v2-de", RS_GPT2, 0 }, { "a.x-4.0", RS_GPT2, 0 },
  { "mellum", RS_GPT2, 0 }, { "modern-bert", RS_GPT2, 0 }, { "exaone4", RS_GPT2, 0 },
  { "jina-v1-en", RS_GPT2, PRE_ADD_SEP }, { "jina-v2-code", RS_GPT2, PRE_ADD_SEP }, { "roberta-bpe", RS_GPT2, PRE_ADD_SEP },
  { "jais-2", RS_JAIS2, 0 }, { "refact", RS_STARCODER, 0 }, { "command-r", RS_STARCODER, NC },
  { "qwen2", RS_QWEN2, NC }, { "deepseek-r1-qwen", RS_QWEN2, NC }, { "kormo", RS_QWEN2, NC }, { "f2llmv2", RS_QWEN2, NC },
  { "qwen35", RS_QWEN35, NC }, { "stablelm2", RS_QWEN2, 0 }, { "olmo", RS_GPT2, 0 }, { "dbrx", RS_LLAMA3, 0 },
  { "smaug-bpe", RS_LLAMA3, 0 }, { "poro-chat", RS_PORO, NC }, { "glm4", RS_LLAMA3, PRE_NO_BOS_ID | PRE_IGNORE_MERGES },
  { "chatglm-bpe", RS_LLAMA3, PRE_NO_BOS_ID }, { "viking", RS_VIKING, NC }, { "jais", RS_GPT2, 0 },
  { "tekken", RS_TEKKEN, NC | PRE_IGNORE_MERGES | PRE_ADD_BOS }, { "smollm", RS_STARCODER, NC },
  { "codeshell", RS_STARCODER, 0 }, { "bloom", RS_PORO, 0 }, { "gpt3-finnish", RS_PORO, 0 },
  { "exaone", RS_STARCODER, 0 }, { "exaone-moe", RS_EXAONE_MOE, 0 }, { "chameleon", RS_CHAMELEON, PRE_ADD_BOS | NC },
  { "minerva-7b", RS_STARCODER, 0 }, { "megrez", RS_QWEN2, 0 },
  { "gpt-4o", RS_GPT4O, NC }, { "llama4", RS_GPT4O, NC }, { "kanana2", RS_GPT4O, NC }, { "talkie", RS_GPT4O, NC },
  { "minimax-m2", RS_GPT4O, NC }, { "granite-embed-multi-97m", RS_GRANITE_EMB, NC | PRE_IGNORE_MERGES },
  { "tiny_aya", RS_TINY_AYA, NC }, { "cohere2moe", RS_TINY_AYA, NC }, { "superbpe", RS_SUPERBPE, NC },
  { "trillion", RS_GPT2, NC }, { "granite-docling", RS_GPT2, NC },
  { "bailingmoe", RS_BAILINGMOE, NC }, { "bailingmoe2", RS_BAILINGMOE, NC }, { "llada-moe", RS_BAILINGMOE, NC },
  { "seed-coder", RS_SEED_CODER, NC }, { "hunyuan", RS_QWEN2, NC }, { "ufakzeka", RS_UFAKZEKA, NC },
  { "grok-2", RS_QWEN2, NC }, { "laguna", RS_LAGUNA, NC }, { "solar-open", RS_QWEN2, NC },
  { "minicpm5", RS_MINICPM5, PRE_IGNORE_MERGES }, { "mellum2", RS_STARCODER, 0 },
  { "glm5", RS_LLAMA3, PRE_NO_BOS_ID | PRE_IGNORE_MERGES },
  { "kimi-k2", RS_KIMI_K2, NC | PRE_MERGES_OPTIONAL }, { "afmoe", RS_AFMOE, NC },
  { "whitespace", RS_WHITESPACE, PRE_RAW_UTF8 | PRE_KEEP_CASE },
  { "gemma4", RS_LINES, SPM_BPE | PRE_NEWLINES_WHOLE | PRE_FORCE_BOS },
  { "granite-embed-multi-311m", RS_LINES, SPM_BPE | PRE_NEWLINES_WHOLE | PRE_FORCE_BOS },
  { "sarvam-moe", RS_LINES, SPM_BPE | NC },
};
#undef SPM_BPE
#undef NC

const char *pretok_name(int i) {
  return i >= 0 && i < (int)(sizeof PRE_NAMES / sizeof PRE_NAMES[0]) ? PRE_NAMES[i].name : NULL;
}

/* The steps in order: a compiled regex, or (re NULL) a custom splitter. */
struct pretok {
  pcre2_code *re[MAX_RE];
  pretok_custom custom[MAX_RE];
  int n;
};

/* Rewrites the escapes whose meaning under PCRE2_UCP differs from what
 * llama.cpp runs: \s and \S are its whitespace set (PCRE2's lacks U+0085
 * and friends); \d and \b are ASCII, as in std::wregex's "C" locale. */
#define ASCII_WORD "[A-Za-z0-9_]"
static char *rewrite_escapes(const char *re) {
  strbuf b = { 0 };
  bool in_class = false;
  for (const char *p = re; *p; p++) {
    if (*p == '\\' && p[1]) {
      char e = p[1];
      if (e == 's') sb_printf(&b, in_class ? "%s" : "[%s]", UCP_SPACE_CLASS);
      else if (e == 'S' && !in_class) sb_printf(&b, "[^%s]", UCP_SPACE_CLASS);
      else if (e == 'd') sb_puts(&b, in_class ? "0-9" : "[0-9]");
      else if (e == 'b' && !in_class)
        sb_puts(&b, "(?:(?<=" ASCII_WORD ")(?!" ASCII_WORD ")|(?<!" ASCII_WORD ")(?=" ASCII_WORD "))");
      else sb_printf(&b, "%c%c", p[0], e);
      p++;
      continue;
    }
    if (*p == '[' && !in_class) in_class = true;
    else if (*p == ']' && in_class) in_class = false;
    sb_printf(&b, "%c", *p);
  }
  return b.s ? b.s : tg_xstrdup("");
}

void pretok_free(pretok *p) {
  if (!p) return;
  for (int i = 0; i < p->n; i++)
    if (p->re[i]) pcre2_code_free(p->re[i]);
  free(p);
}

/* The custom splitter llama.cpp runs for regex re, or -1. */
static int custom_step(const char *re) {
  for (size_t k = 0; k < sizeof CUSTOM_STEPS / sizeof CUSTOM_STEPS[0]; k++)
    if (!strcmp(re, CUSTOM_STEPS[k].re)) return (int)CUSTOM_STEPS[k].kind;
  return -1;
}

pretok *pretok_new(const char *name, unsigned *flags) {
  if (!name || !*name) name = "default";
  const pre_name *pn = NULL;
  for (size_t i = 0; i < sizeof PRE_NAMES / sizeof PRE_NAMES[0]; i++)
    if (!strcmp(PRE_NAMES[i].name, name)) pn = &PRE_NAMES[i];
  if (!pn) TG_FAIL("tokenizer: unknown pre-tokenizer '%s' (tokenizer.ggml.pre)", name);
  *flags = pn->flags;
  pretok *p = tg_xcalloc(1, sizeof *p);
  for (int i = 0; i < MAX_RE && REGEX_SETS[pn->set][i]; i++) {
    int custom = custom_step(REGEX_SETS[pn->set][i]);
    if (custom >= 0) {
      p->custom[p->n++] = (pretok_custom)custom;
      continue;
    }
    char *src = rewrite_escapes(REGEX_SETS[pn->set][i]);
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY,
                                   &err, &off, NULL);
    if (!re) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      tg_seterr("tokenizer: pre-tokenizer '%s' regex %d: %s at offset %zu", name, i, (const char *)msg, (size_t)off);
      free(src);
      pretok_free(p);
      return NULL;
    }
    free(src);
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);   /* optional: falls back to the interpreter */
    p->re[p->n++] = re;
  }
  return p;
}

typedef pretok_span_vec span_vec;

static void push_span(span_vec *v, size_t start, size_t len) {
  if (len) VEC_PUSH(*v, ((pretok_span){ start, len }));
}

/* One match at or after pos: the JIT first; when it runs out of its stack
 * (long words in patterns with repeated groups), the interpreter, which
 * uses the heap. >= 0 on a match, PCRE2_ERROR_NOMATCH, or another error. */
static int match_at(const pcre2_code *re, PCRE2_SPTR subj, size_t len, size_t pos, uint32_t opts,
                    pcre2_match_data *md) {
  int rc = pcre2_match(re, subj, len, pos, opts | PCRE2_NO_UTF_CHECK, md, NULL);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT) rc = pcre2_match(re, subj, len, pos, opts | PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, NULL);
  return rc;
}

/* Splits [start, start+len) of text by re into matches and gaps; -1 with
 * tg_error when PCRE2 fails (e.g. a resource limit). */
static int split_one(const pcre2_code *re, pcre2_match_data *md, const char *text, size_t start, size_t len,
                     span_vec *out) {
  PCRE2_SPTR subj = (PCRE2_SPTR)(text + start);
  size_t pos = 0, done = 0;
  uint32_t opts = 0;
  while (pos <= len) {
    int rc = match_at(re, subj, len, pos, opts, md);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      return tg_seterr("tokenizer: pre-tokenizer regex failed at byte %zu: %s", start + pos, (const char *)msg);
    }
    if (rc < 0) {
      if (opts && pos < len) {   /* no non-empty match here: step one character */
        opts = 0;
        pos += (size_t)utf8_seq_len((unsigned char)text[start + pos]);
        if (pos > len) pos = len;
        continue;
      }
      break;
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t ms = ov[0], me = ov[1];
    push_span(out, start + done, ms - done);
    push_span(out, start + ms, me - ms);
    done = me;
    pos = me;
    /* after an empty match, look for a non-empty one at the same place */
    opts = ms == me ? PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED : 0;
    if (ms == me && pos >= len) break;
  }
  push_span(out, start + done, len - done);
  return 0;
}

int pretok_split(const pretok *p, const char *text, size_t n, pretok_span **out) {
  span_vec cur = { 0 };
  push_span(&cur, 0, n);
  for (int r = 0; r < p->n; r++) {
    span_vec next = { 0 };
    int rc = 0;
    if (!p->re[r]) {
      for (int i = 0; i < cur.n; i++) pretok_custom_split(p->custom[r], text, cur.v[i].start, cur.v[i].len, &next);
    } else {
      pcre2_match_data *md = pcre2_match_data_create_from_pattern(p->re[r], NULL);
      for (int i = 0; i < cur.n && rc == 0; i++) rc = split_one(p->re[r], md, text, cur.v[i].start, cur.v[i].len, &next);
      pcre2_match_data_free(md);
    }
    VEC_FREE(cur);
    cur = next;
    if (rc < 0) {
      VEC_FREE(cur);
      *out = NULL;
      return -1;
    }
  }
  *out = cur.v;
  return cur.n;
}
