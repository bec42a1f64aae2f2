def inc(x):
    return x + 1


def compose(f, g):
    return lambda x: f(g(x))


def main():
    both = compose(inc, inc)
    return both(1)
