"""Pure decisions: precedence, validity, scope, data classes (secrets), untrusted text.

No I/O anywhere in this package; the store applies what these functions decide.
"""
