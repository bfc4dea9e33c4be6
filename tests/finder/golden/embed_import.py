from ansible.module_utils import embed
DATA = embed.EmbedManager.embed("ansible.module_utils", "x.txt")
