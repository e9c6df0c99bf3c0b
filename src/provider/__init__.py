"""KServe knowledge: translation of OpenEverest Instances into KServe objects."""
