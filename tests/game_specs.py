"""The game specs the generic tests run over: every game, and the option sets that change its rules."""

GAME_SPECS = [
    "tictactoe",
    "gomoku:size=7,k=4",
    "gomoku:size=9,k=5",
    "gomoku:width=8,height=6,k=4,rule=standard",
    "gomoku:size=5,k=3,rule=standard",
    "gomoku",
]
