def square(x):
    return x * x


def twice(func, value):
    return func(func(value))


def main():
    return twice(lambda v: square(v), 3)
