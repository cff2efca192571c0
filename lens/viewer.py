"""The interactive trace viewer (``flujo lens trace RUN --tui``): the span tree on the left, the selected
node whole on the right.

Keys: ↑/↓ move; Enter, Space or →/← open and close a node (← on a closed node goes to its parent);
``e`` / ``c`` open / close everything; ``/`` searches (Enter to go, ``n`` / ``N`` next / previous match,
Esc to close); ``q`` quits.

This is the one module that imports Textual (about 250 ms): nothing imports it until a viewer is opened
(``lens.open_viewer``), so ``flujo --help`` and the plain views never pay for it. Tree nodes are created
when their parent is first opened, so a run of 10,000 events opens at once; the model (``lens.tree``) is
searched, not the widget, so a search finds nodes that were never opened.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import tzinfo
from typing import TYPE_CHECKING, ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer, Input, Static, Tree
from textual.widgets.tree import TreeNode

import lens.labels as labels
from lens.detail import detail, search_text
from lens.plain import Expansion
from lens.tree import CallNode, MessageNode, Node, RunNode, walk

if TYPE_CHECKING:
    from lens.why import Provenance

EXPAND_ALL_LIMIT = 5_000
"""``e`` opens agent calls too (showing every message) only in runs of at most this many nodes."""


def _size(root: RunNode) -> int:
    """How many nodes the tree has, messages included (counted without making them)."""
    return sum(len(n.prompt.messages) + 1 if isinstance(n, CallNode) else 1 for n in _spans(root))


def _spans(node: Node) -> Iterator[Node]:
    """Every node but the messages, depth first."""
    yield node
    if not isinstance(node, CallNode):
        for child in node.children:
            yield from _spans(child)


class SpanTree(Tree[Node]):
    """Textual's tree, with → and ← opening and closing nodes (a plain Tree scrolls sideways with them)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right", "open_node", "Open", show=False),
        Binding("left", "close_node", "Close", show=False),
    ]

    def action_open_node(self) -> None:
        """Open the node under the cursor; on an open node, go to its first child."""
        widget = self.cursor_node
        if widget is None or not widget.allow_expand:
            return
        if not widget.is_expanded:
            widget.expand()
        elif widget.children:
            self.move_cursor(widget.children[0])

    def action_close_node(self) -> None:
        """Close the node under the cursor; on a closed node (or a leaf), go to its parent."""
        widget = self.cursor_node
        if widget is None:
            return
        if widget.is_expanded and widget.allow_expand:
            widget.collapse()
        elif widget.parent is not None:
            self.move_cursor(widget.parent)


class TraceViewer(App[None]):
    """A run's span tree, opened by ``lens.open_viewer`` (or ``run_test()`` in tests)."""

    TITLE = "flujo lens"
    CSS = """
    #tree { width: 3fr; min-width: 30; border-right: solid $primary-darken-2; }
    #detail-pane { width: 2fr; padding: 0 1; }
    #status { height: 1; background: $panel; padding: 0 1; }
    #search { dock: bottom; display: none; }
    #search.open { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("e", "expand_all", "Expand all"),
        Binding("c", "collapse_all", "Collapse all"),
        Binding("slash", "search", "Search"),
        Binding("n", "next_match", "Next", show=False),
        Binding("N", "next_match(-1)", "Previous", show=False),
        Binding("escape", "close_search", "Close search", show=False),
    ]

    def __init__(
        self,
        root: RunNode,
        *,
        expand: Expansion | None = None,
        tz: tzinfo | None = None,
        whole: RunNode | None = None,
    ) -> None:
        """``root`` is what the viewer shows; ``whole`` the whole run when ``root`` is a part of it (``--step``):
        the origins of the turns a call sent are read from the events of every step that made one."""
        super().__init__()
        self.model = root
        self.whole = whole or root
        self.expansion = expand or Expansion()
        self.tz = tz
        self.parents: dict[int, Node] | None = None  # id(model node) → its parent, made at the first reveal
        self.widgets: dict[int, TreeNode[Node]] = {}  # id(model node) → its tree node, once created
        self.matches: list[Node] = []
        self.match_index = -1
        self.query_text = ""
        self.index: list[tuple[Node, str]] | None = None
        self.provenance: Provenance | None = None  # where each call's messages came from, made when first shown

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield SpanTree(labels.label(self.model), data=self.model, id="tree")
            with VerticalScroll(id="detail-pane"):
                yield Static(id="detail")
        yield Static(id="status")
        yield Input(placeholder="search the trace (Enter to find, Esc to close)", id="search")
        yield Footer()

    def on_mount(self) -> None:
        tree = self._tree()
        tree.guide_depth = 3
        self.widgets[id(self.model)] = tree.root
        self._populate(tree.root)
        tree.root.expand()
        if self.expansion.everything:
            self.action_expand_all()
        tree.focus()
        self._show(self.model)
        self._status(f"run {self.model.run_id} · / search · e expand all · c collapse all · q quit")

    # --- the tree -----------------------------------------------------------------------------------

    def _tree(self) -> SpanTree:
        return self.query_one("#tree", SpanTree)

    def _populate(self, widget: TreeNode[Node]) -> None:
        """Create the tree nodes of ``widget``'s children, once."""
        model = widget.data
        if model is None or widget.children or not model.children:
            return
        for child in model.children:
            self.widgets[id(child)] = widget.add(labels.label(child), data=child, allow_expand=bool(child.children))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Node]) -> None:
        self._populate(event.node)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[Node]) -> None:
        if event.node.data is not None:
            self._show(event.node.data)

    def _show(self, node: Node) -> None:
        self.query_one("#detail", Static).update(self._detail(node))
        self.query_one("#detail-pane", VerticalScroll).scroll_home(animate=False)

    def _detail(self, node: Node) -> RenderableType:
        shown = detail(node, tz=self.tz)
        origins = self._origins(node)
        return shown if origins is None else Group(shown, Text(), origins)

    def _origins(self, node: Node) -> RenderableType | None:
        """What ``lens trace --why`` says of a call (where each of its messages came from, and what history was
        left out), or of one message; None for other nodes."""
        from lens.why import message_origins, origin_words, why_lines

        if isinstance(node, CallNode):
            lines = why_lines(node, self._provenance())[1:]
            return Group(Text("why each message is there", style="bold"), *(Text(line) for line in lines))
        if isinstance(node, MessageNode):
            widget = self.widgets.get(id(node))
            call = widget.parent.data if widget is not None and widget.parent is not None else None
            if not isinstance(call, CallNode):
                return None
            origins = message_origins(call, self._provenance())
            if node.index >= len(origins):
                return None
            return Text.assemble(("why  ", "bold"), origin_words(origins[node.index]))
        return None

    def _provenance(self) -> Provenance:
        if self.provenance is None:
            from lens.why import Provenance

            self.provenance = Provenance(self.whole.children)
        return self.provenance

    def _status(self, text: str) -> None:
        self.query_one("#status", Static).update(text)

    def action_expand_all(self) -> None:
        """Open every node; in a run too large for that to be useful, agent calls stay closed (their
        messages are in the detail pane, and Enter opens one)."""
        tree = self._tree()
        whole = _size(self.model) <= EXPAND_ALL_LIMIT
        pending = [tree.root]
        while pending:  # create the nodes first: expand_all opens only the nodes that exist
            widget = pending.pop()
            if whole or not isinstance(widget.data, CallNode):
                self._populate(widget)
                pending.extend(widget.children)
        with tree.prevent(Tree.NodeExpanded):  # every node is made already: no message per node needed
            if whole:
                tree.root.expand_all()
            else:
                for widget in self.widgets.values():
                    if widget.allow_expand and not isinstance(widget.data, CallNode):
                        widget.expand()
        if not whole:
            self._status(
                f"opened every step; agent calls stay closed in a run this large ({_size(self.model):,}"
                " nodes): Enter opens one, and the right pane shows its messages"
            )

    def action_collapse_all(self) -> None:
        tree = self._tree()
        with tree.prevent(Tree.NodeCollapsed):
            for child in tree.root.children:
                child.collapse_all()
        tree.move_cursor(tree.root)

    # --- search -------------------------------------------------------------------------------------

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.add_class("open")
        box.focus()

    def action_close_search(self) -> None:
        box = self.query_one("#search", Input)
        box.remove_class("open")
        self._tree().focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_text = event.value.strip()
        self.action_close_search()
        wanted = self.query_text.lower()
        if self.index is None:  # made at the first search: the text of every node, messages included
            self.index = [(node, search_text(node).lower()) for node in walk(self.model)]
        self.matches = [node for node, text in self.index if wanted and wanted in text]
        self.match_index = -1
        if not self.matches:
            self._status(f"no match for {self.query_text!r}")
            return
        self.action_next_match()

    def action_next_match(self, step: int = 1) -> None:
        if not self.matches:
            return
        self.match_index = (self.match_index + step) % len(self.matches)
        self.reveal(self.matches[self.match_index])
        self._status(
            f"match {self.match_index + 1} of {len(self.matches)} for {self.query_text!r} · n next · N previous"
        )

    def reveal(self, node: Node) -> None:
        """Open the ancestors of ``node``, creating their tree nodes, and put the cursor on it."""
        if self.parents is None:  # not at mounting: walking every node makes every agent call's messages
            self.parents = {id(child): parent for parent in walk(self.model) for child in parent.children}
        chain = [node]
        while id(chain[-1]) in self.parents:
            chain.append(self.parents[id(chain[-1])])
        for ancestor in reversed(chain[1:]):
            widget = self.widgets[id(ancestor)]
            self._populate(widget)
            widget.expand()
        tree = self._tree()
        _ = tree.last_line  # lays the opened lines out now, so the target has its line number
        tree.move_cursor(self.widgets[id(node)])
        self._show(node)
