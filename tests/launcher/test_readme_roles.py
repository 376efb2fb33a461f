from launcher.role_list import ROLES
from tests.guards.project_files import ROOT


def test_readme_role_table_is_the_declarations():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("<!-- roles:begin -->\n", 1)[1].split("<!-- roles:end -->", 1)[0]
    assert table == ROLES.markdown_table(), "regenerate the README table with `serve roles list`"
