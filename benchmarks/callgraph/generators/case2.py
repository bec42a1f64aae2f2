def parse(line):
    return line.split(",")


def rows(lines):
    for line in lines:
        yield parse(line)


def main():
    total = 0
    for row in rows(["a,b", "c"]):
        total += len(row)
    return total
