RULES = {}


def rule(name):
    def register(func):
        RULES[name] = func
        return func

    return register


@rule("half")
def half(amount):
    return amount / 2


def main():
    return half(4)
