def double(x):
    return x * 2


def apply(func, value):
    return func(value)


def main():
    return apply(double, 3)
