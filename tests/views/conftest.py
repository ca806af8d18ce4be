import sys
from pathlib import Path

# bench/synthetic.py builds the large synthetic machines the tests share with the bench
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
