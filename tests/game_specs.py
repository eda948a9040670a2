"""The game specs the generic tests run over: every game, and the option sets that change its rules."""

GAME_SPECS = [
    "tictactoe",
    "gomoku:size=7,k=4",
    "gomoku:size=9,k=5",
    "gomoku:width=8,height=6,k=4,rule=standard",
    "gomoku:size=5,k=3,rule=standard",
    "gomoku",
    "connect4",
    "connect4:rows=5,columns=4",
    "nim",
    "nim:pile=7,misere=true",
    "othello",
    "othello:size=6",
    "othello:size=4",
    "go",
    "go:size=5",
    "go:size=7,komi=5.5",
]
