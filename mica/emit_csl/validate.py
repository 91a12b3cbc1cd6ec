def validate(files):
    pass
