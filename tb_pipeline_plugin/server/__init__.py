"""The TensorBoard plugin: routes, parameter parsing and the OpenAPI document (the answers' Structs are the
`contract` leaf's).

The only package that knows about HTTP (werkzeug) and TensorBoard's plugin API.
"""
