import functools


def record(name):
    return name


def logged(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        record(func.__name__)
        return func(*args, **kwargs)

    return wrapper


@logged
def place_order(amount):
    return amount


def main():
    return place_order(3)
