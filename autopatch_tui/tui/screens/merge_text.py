"""The merge dialog's longer texts (plain `str`, shown as `Text`, never markup): the confirmation of
one merge, naming both stores the way people know them, and the status after a merge."""

from __future__ import annotations


def confirm_body(src_name: str, tgt_name: str, src_line: str, tgt_line: str, *, own: bool) -> str:
    """`*_name`: label, else root, else store name; `*_line`: label · root · facts · store name."""
    body = (f"Merge {src_name} into {tgt_name}?\n\n"
            f"merge  {src_line}\ninto   {tgt_line}\n\n"
            f"Its threads, turns and Memory move into {tgt_name}; {src_name} is then retired and its file "
            "is kept as a backup.")
    if own:
        body += f"\n\nThis is the store this app uses: after the merge the app continues with {tgt_name}."
    return body


def after_merge_status(src_name: str, tgt_name: str, left: int) -> str:
    """The status after a merge. The scan's other pairs were judged before the merge: the merged store
    was never compared as one, so "no duplicates" cannot be claimed until a new scan."""
    if left:
        return (f"Merged {src_name} into {tgt_name}. {left} proposal(s) of this scan left; the ones with either "
                f"store were removed. Scan again (r) to compare {tgt_name} with the others.")
    return (f"Merged {src_name} into {tgt_name}. No proposals of this scan are left; scan again (r) to compare "
            f"{tgt_name} with the other stores.")
