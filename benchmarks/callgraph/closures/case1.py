def rate(amount, tax):
    return amount * tax


def with_tax(tax):
    def add_tax(amount):
        return amount + rate(amount, tax)

    return add_tax


def main():
    return with_tax(0.2)(10)
