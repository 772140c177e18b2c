"""In-tree plugins, each a package of the same shape, seeing only the
framework's public interfaces.
"""
