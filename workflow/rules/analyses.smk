# Analyses over cached logits (image-classification-tests.txt, accuracy-extrapolation-rroc.txt).


def analysis_outputs():
    return []
