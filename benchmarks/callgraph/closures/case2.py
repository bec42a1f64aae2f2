def count():
    return 1


def counter():
    total = 0

    def step():
        nonlocal total
        total += count()
        return total

    return step


def main():
    tick = counter()
    tick()
    return tick()
