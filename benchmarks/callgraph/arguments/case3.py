def score(word):
    return len(word)


def by_key(words, key):
    best = None
    for word in words:
        if best is None or key(word) > key(best):
            best = word
    return best


def main():
    return by_key(["aa", "b"], score), sorted(["aa", "b"], key=score)
