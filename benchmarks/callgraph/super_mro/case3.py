class A:
    def hello(self):
        return "a"


class B(A):
    def hello(self):
        return "b" + super().hello()


class C(A):
    def hello(self):
        return "c" + super().hello()


class D(B, C):
    def hello(self):
        return "d" + super().hello()


def main():
    return D().hello()
