def check(text, name):
    pass
