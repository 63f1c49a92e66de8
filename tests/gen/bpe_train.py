"""bpe_train.py: the toy BPE trainer the tokenizer generators share
(gen_tok_gemma4.py, gen_tok_pretok.py): merges learned over a list of
words, each a sequence of symbols."""
import collections


def train_bpe(words, n_merges):
    """Merges learned over the words (sequences of symbols; empty ones are
    skipped): the most frequent adjacent pair first, ties to the pair seen
    first."""
    words = [list(w) for w in words if w]
    merges = []
    for _ in range(n_merges):
        counts = collections.Counter()
        for w in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] += 1
        if not counts:
            break
        (a, b), _ = max(counts.items(), key=lambda kv: kv[1])
        merges.append((a, b))
        for w in words:
            i = 0
            while i + 1 < len(w):
                if w[i] == a and w[i + 1] == b:
                    w[i:i + 2] = [a + b]
                i += 1
    return merges
