def percent_off(amount, value):
    return amount * (1 - value / 100)


def fixed_off(amount, value):
    return amount - value


RULES = {"percent": percent_off, "fixed": fixed_off}


def discount(kind, amount, value):
    return RULES[kind](amount, value)


def main():
    return discount("percent", 100, 10), discount("fixed", 100, 5)
