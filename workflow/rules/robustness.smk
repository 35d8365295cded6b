# Class-wise robustness analyses over cached logits (classwise-robustness-cfps.txt) and the
# transformation tests of image-classification-tests.txt.


def robustness_outputs():
    return []
