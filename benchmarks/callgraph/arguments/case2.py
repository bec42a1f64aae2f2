def shout(text):
    return text.upper()


def whisper(text):
    return text.lower()


def each(items, transform):
    return [transform(item) for item in items]


def main():
    return each(["a"], shout) + each(["B"], transform=whisper)
