"""`hivelore mcp`: the stdio MCP server.

`tools` defines the tools on the official `mcp` SDK; `stdio` owns the process's stdin and stdout and
starts in a fraction of a second, answering the handshake from `answers` while the SDK loads.
"""
