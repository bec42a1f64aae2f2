def strip(text):
    return text.strip()


def lower(text):
    return text.lower()


def clean(text):
    for step in [strip, lower]:
        text = step(text)
    return text


def main():
    return clean(" Hi ")
