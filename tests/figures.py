"""Reading the token-and-tally figures of chapters 5 and 6 back in tests: what the learner sees."""
import numpy as np


def bar_heights(fig):
    """The heights of the bars in the right-hand panel (the running tally)."""
    return np.array([p.get_height() for p in fig.axes[1].patches])


def token_boxes(fig):
    """(text, facecolour) of every token box of the token panel, in order."""
    return [(t.get_text(), t.get_bbox_patch().get_facecolor()) for t in fig.axes[0].texts
            if t.get_bbox_patch() is not None]


def plain_texts(fig):
    """The token panel's texts without a box (the original tokens under masked ones, the
    segment ids under the tokens), in order."""
    return [t.get_text() for t in fig.axes[0].texts if t.get_bbox_patch() is None]
